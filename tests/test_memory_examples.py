"""examples/support_memory.py runs offline and remembers a customer across threads: what the
first thread taught (by a tool and by the memory writer) a new thread of the same customer
finds by a search and uses; another customer finds nothing."""

from __future__ import annotations

from tests._examples import run_example


def threads(out: str) -> list[str]:
    """The output of each thread, in order (the text after each ``== thread`` line)."""
    return out.split("== thread ")[1:]


def memories(thread: str) -> list[str]:
    """The memories the thread printed after its turn (``memories of ... now:``)."""
    listed = thread.split(" now:\n", 1)[1].splitlines()
    return [line.strip() for line in listed if line.startswith("    ")]


def test_support_memory_remembers_a_customer_across_threads_and_keeps_customers_apart() -> None:
    out = run_example("support_memory.py")
    monday, friday, bob = threads(out)

    assert monday.startswith("'t-monday', user cust-ada: a new conversation")
    assert "  tool save_memory -> saved as contact\n" in monday
    assert memories(monday) == [
        "account: Ada Lovelace, account AC-1001",
        "contact: Ada wants to be contacted by email, never by phone",
        "issue: Ada's router keeps dropping the Wi-Fi; restart suggested",
    ]

    assert friday.startswith("'t-friday', user cust-ada: a new conversation")
    found = friday.split("tool search_memories -> ", 1)[1].split("\nagent: ", 1)[0]
    assert [line.strip().split(":")[0] for line in found.splitlines()] == [
        "issue",
        "contact",
        "account",
    ]
    assert "agent: Sorry, Ada! Your Wi-Fi issue on account AC-1001 is still open" in friday
    assert memories(friday)[2] == "issue: Ada's router keeps dropping the Wi-Fi; ticket T-1 open"

    assert bob.startswith("'t-bob', user cust-bob: a new conversation")
    assert "  tool search_memories -> nothing remembered about that\n" in bob
    assert "    (none)\n" in bob

    assert "search 'is my Wi-Fi ticket still open?' -> issue\n" in out
    assert "search 'email or phone?' -> contact\n" in out
    assert "search 'which account number?' -> account\n" in out
    assert out.endswith("memory writer: 3 turns, 3 written, 3 changes, 0 failed\n")
