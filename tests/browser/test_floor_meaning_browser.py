"""The relevance floor's dense half in Chromium (issue 38, item 3): with MiniLM loaded in
the worker, a question about nothing stored gets nothing and says why in ``notes``, a
real one finds its memory, and the worker's prompt text equals CPython's for the same
store and questions."""

import asyncio
import concurrent.futures

from browserkit import js

from pymemory import Memory
from pymemory.models import find_model_dir, load_minilm
from pymemory.models.ort import OrtRuntime
from pymemory.retrieval.pipeline import NO_STANDOUT
from pymemory.storage import MapKv

NOTES = [
 "The new router's Wi-Fi network is HomeNet-5G and the password is lei88wifi2026.",
 "Bought a latte at the coffee shop downtown for 4.50.",
 "Dinner with my college roommate Sam at the Peking duck place, 45 each.",
 "My daughter's piano teacher is Ms. Zhao, phone 0139 1024 7788.",
 "The meeting today ran three hours; my head hurts.",
 "Switched my phone to a Pixel 9; gave the old one to my mom.",
 "Dentist appointment moved to next Thursday at 10 am.",
 "The car needs an oil change before the road trip in May.",
 "Lena recommended the novel Piranesi; added it to my reading list.",
 "Gym membership renews on the 1st of every month, 39 a month.",
 "The landlord said the heating will be fixed on Monday.",
 "Booked flights to Lisbon for the week of June 10.",
 "My passport expires in November next year.",
 "Started learning Spanish on an app, ten minutes a day.",
 "The kids' school play is on Friday evening at 6.",
 "Paid the electricity bill, 82 this month.",
 "Tom lent me his ladder; need to return it by Sunday.",
 "Allergic to penicillin: tell every new doctor.",
 "Wedding anniversary is on the 14th of August.",
 "The office moved to the fourth floor of the Baker building.",
]
UNRELATED = ["what is the capital of Peru?", "how warm is it on the moon?", "write a poem about autumn"]
REAL = {"what is the Wi-Fi password?": "lei88wifi2026", "who is the piano teacher?": "Ms. Zhao"}
DAY = 86_400_000


def _sync(coro):
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def test_unrelated_questions_get_nothing_in_the_worker(harness):
    questions = [*UNRELATED, *REAL]
    result = js(
        harness,
        """
        const [db, notes, questions] = args;
        const m = pm.createAgentMemory({ dbName: db, models: ["embedder"] });
        await m.ready;
        await m.modelsReady;
        const t0 = Date.now();
        for (const [i, text] of notes.entries()) {
          await m.addMemory({ text, timestamp: t0 - (i + 1) * 86400000 });
        }
        await pm.connection().call(db, "modelsIdle", {});
        const out = [];
        for (const q of questions) out.push(await m.retrieve(q));
        return { t0, out };
        """,
        "standout",
        NOTES,
        questions,
    )
    got = dict(zip(questions, result["out"], strict=True))
    for q in UNRELATED:
        assert got[q]["mode"] == "hybrid" and got[q]["memories"] == [] and got[q]["text"] == "", q
        assert NO_STANDOUT in got[q]["notes"], q
    for q, answer in REAL.items():
        assert answer in got[q]["memories"][0]["item"]["text"] and NO_STANDOUT not in got[q]["notes"]

    async def cpython_run():
        minilm = await load_minilm(OrtRuntime(intra_op_threads=1), find_model_dir("minilm"))
        mem = await Memory.open(MapKv(), clock=lambda: result["t0"])
        await mem.attach_embedder(minilm)
        for i, note in enumerate(NOTES):
            await mem.add(note, timestamp=result["t0"] - (i + 1) * DAY)
        await mem.embed_idle()
        out = [await mem.retrieve(q) for q in questions]
        await mem.close()
        return out

    for q, here in zip(questions, _sync(cpython_run()), strict=True):
        assert got[q]["text"] == here.text, q
