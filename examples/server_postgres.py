"""A Starlette app that keeps each user's memory in PostgreSQL (docs/server-store.md).

Run: PYMEMORY_DSN="postgresql://app@db.internal/app" uvicorn examples.server_postgres:app
"""

import os
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from pymemory.integrations.server import MemoryPool


@asynccontextmanager
async def lifespan(app: Starlette):
    # One pool per process: one PostgreSQL connection pool, each user's Memory opened on
    # first use, the least recently used closed beyond max_open or after idle_s.
    app.state.pool = await MemoryPool.on_postgres(
        os.environ["PYMEMORY_DSN"], max_open=500, idle_s=600
    )
    yield
    await app.state.pool.close()


def user_of(request: Request) -> str:
    # Who is asking is your authentication's answer (a session, a verified token), never
    # something the client chooses; a header keeps this example short.
    return request.headers["x-user"]


async def remember(request: Request) -> JSONResponse:
    body = await request.json()
    async with request.app.state.pool.user(user_of(request)) as memory:
        item = await memory.add(body["text"], tags=body.get("tags", []))
    return JSONResponse({"id": item.id, "content": item.content})


async def recall(request: Request) -> JSONResponse:
    async with request.app.state.pool.user(user_of(request)) as memory:
        found = await memory.retrieve(request.query_params["q"], max_items=3)
    return JSONResponse({"memories": [m.item.content for m in found.memories]})


app = Starlette(
    routes=[Route("/memories", remember, methods=["POST"]), Route("/recall", recall)],
    lifespan=lifespan,
)
