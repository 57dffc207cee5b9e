"""The RPC agent tests' harness: RpcApis over shared MapKv stores, as workers over one
IndexedDB, and the JSON calls that assert an answer or an error code."""

from __future__ import annotations

import json

from helpers import Clock

from pymemory.browser.rpc import RpcApi, close_agents
from pymemory.storage import MapKv

BLOCKS = [
    {"label": "human", "description": "What you know about the user.", "limit": 200},
    {"label": "persona", "value": "I am a careful assistant.", "readOnly": True},
]

# Observer models: the rule-based one, and a threshold that observes every step at once.
RULES = {"kind": "rules"}
EAGER = {"tokenThreshold": 1, "keepRecentSteps": 0}  # every step is observed at once


class Harness:
    """RpcApis over shared MapKv stores: ``reopen()`` is a new worker over the same data."""

    def __init__(self) -> None:
        self.stores: dict[str, MapKv] = {}
        self.clock = Clock()
        self.apis: list[RpcApi] = []
        self.api = self.new_api()

    def new_api(self) -> RpcApi:
        async def factory(name: str) -> MapKv:
            # A new handle on the database's data each time, like IndexedDB: closing one
            # handle (the "close" method) leaves the data for the next.
            data = self.stores.setdefault(name, MapKv())
            kv = MapKv()
            kv._data, kv._keys = data._data, data._keys
            return kv

        api = RpcApi(factory, feedback_flush_s=3600, clock=self.clock)
        self.apis.append(api)
        return api

    def reopen(self) -> None:
        self.api = self.new_api()

    async def call(self, method: str, params: object = None, db: str = "db") -> dict:
        raw = json.dumps({} if params is None else params)
        return json.loads(await self.api.call(db, method, raw))

    async def ok(self, method: str, params: object = None, db: str = "db"):
        answer = await self.call(method, params, db)
        assert answer["ok"], (method, answer)
        return answer["result"]

    async def err(self, method: str, params: object = None, db: str = "db") -> str:
        answer = await self.call(method, params, db)
        assert not answer["ok"], (method, params, answer)
        return answer["error"]["code"]

    async def close(self) -> None:
        for api in self.apis:
            await close_agents(api)
            await api.close_all()
