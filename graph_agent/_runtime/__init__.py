"""What runs a run: its scopes, ids, threads and loops.

- ``run_scope``: the run a piece of code belongs to (``RunScope``);
- ``task_scope``: the task it belongs to (``TaskScope``, ``current_task``) and what the task
  keeps for its re-run;
- ``ids``: the stable ids of tasks and interrupts;
- ``interrupts``: ``NodeInterrupt``, which stops a task to pause its run;
- ``pool``: the thread pool of parallel steps and tool calls (``run_all``);
- ``workers``: the worker threads of an async run's sync calls (``in_thread``);
- ``run_loop``: the event loop a sync run keeps for the coroutines it meets;
- ``streams``: logic that reads a stream written once (``Pull``, the effect "the next
  piece", and ``stream``/``astream``, the drivers that hand on what the logic makes);
- ``bus``: the event bus, what hands a run's events to its listeners (the events themselves,
  and ``emit``, are ``graph_agent.events``, the layer above).

These modules import nothing else of the package, so every layer may use them.
"""
