"""Background inference gives way to the page's calls, in Chromium with the real SmolLM2.

The structure, not a timing: every model step of the summarizer passes the store worker's
call gate (pymemory/models/runtime.py), so a step that finds a call in flight waits for
it to end. The test keeps calls coming while the summarizer works through a backlog and
then reads the gate's counts: steps were taken, some of them waited for a call, and none
started while a call was in flight (``overlapped``: a step whose bounded wait ran out).
"""

from browserkit import js

BACKLOG = [
    "Hi there! Could you please move our weekly sync with the design team from Tuesday "
    "to Thursday at 3pm? Thanks a lot, and sorry for the late notice.",
    "The deploy to staging failed because the database migration timed out after 30 seconds.",
    "I think the onboarding checklist should mention the VPN setup before the laptop order.",
]


def test_the_summarizer_generates_no_token_while_a_call_is_in_flight(harness):
    got = js(
        harness,
        """
        const m = pm.createAgentMemory({ dbName: "yields", models: ["summarizer"] });
        await m.modelsReady;
        await m.addMany(args[0]);                      // a backlog for the summarizer
        const before = (await m.stats()).background;
        let done = false;
        const idle = pm.connection().call("yields", "modelsIdle", {}).then((r) => { done = true; return r; });
        let calls = 0;
        while (!done) {                                // the user keeps working meanwhile
          await m.addMemory({ content: `note ${calls}` });
          await m.retrieve("design team sync");
          calls += 1;
          await new Promise((r) => setTimeout(r, 100));  // the user reads (past the gate's quiet 50 ms)
        }
        const finished = await idle;
        const after = (await m.stats()).background;
        return { before, after, calls, summarizer: finished.summarizer };
        """,
        BACKLOG * 2,
    )
    before, after = got["before"], got["after"]
    assert got["calls"] > 0
    assert got["summarizer"]["calls"] == len(BACKLOG) * 2  # the backlog was worked through
    assert after["steps"] > before["steps"]  # the summarizer's steps pass the gate
    assert after["waited"] > before["waited"]  # and some of them gave way to a call
    assert after["overlapped"] == before["overlapped"]  # none ran during one
    print(f"\n{got['calls']} call rounds meanwhile; gate {before} -> {after}")
