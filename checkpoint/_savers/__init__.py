"""What the savers share (``MemorySaver``, ``SqliteSaver``, ``RedisSaver``), each module one
rule or one piece of the savers' work:

- ``retention``: what a thread holds, what ``put`` adds, what retention drops (every saver);
- ``index``: where a durable saver stores each state key's value;
- ``ids``: checkpoint and run ids, carrying the time they were made;
- ``leases``: the lease rules and the checks of their arguments;
- ``frozen``: which stored values can be handed out as they are, and copies of the others;
- ``head``, ``head_read``: a thread's latest values kept decoded, and reading a newer head
  when an older one is held;
- ``history``: decoding a thread's history once; ``delta``: full state from deltas;
- ``closing``: ``with`` and ``async with`` for the savers and stores that hold a connection;
- ``sqlite/``: the SQLite saver's own parts (its file, its leases table, its retention).
"""
