"""Every failure named within seconds: a download of Pyodide's WebAssembly that the network
drops fails the boot with `boot_failed` naming its URL at once, not after bootTimeoutMs
(Pyodide itself only logs "wasm instantiation failed!" and waits)."""

import time

from browserkit import js


def test_a_network_drop_during_the_wasm_download_names_the_url_within_10_s(harness, context):
    dropped = []

    def drop(route):
        dropped.append(time.monotonic())
        route.abort("internetdisconnected")

    context.route("**/pyodide.asm.wasm", drop)
    outcome = js(
        harness,
        """
        const m = pm.createAgentMemory({ dbName: 'fail-fast', pyodideSnapshot: false });
        return await m.ready.then(() => ({ ok: true }),
                                  (e) => ({ code: e.code, message: e.message, status: m.status }));
        """,
    )
    failed_at = time.monotonic()
    assert dropped, "the worker never asked for pyodide.asm.wasm"
    assert outcome.get("code") == "boot_failed", outcome
    assert "pyodide.asm.wasm" in outcome["message"] and "http" in outcome["message"]
    assert outcome["status"]["error"]["code"] == "boot_failed"
    assert failed_at - dropped[0] < 10, f"{failed_at - dropped[0]:.1f} s after the drop"
    harness.errors.clear()  # the failed boot's own console report
