"""The server's warm-up (app.py's lifespan): it computes what a new visitor's first run asks for."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard.common.session import state
from dashboard.common.sidebar import default_spec
from dashboard.common.source.compute import DataSpec
from dashboard.server import warmup

ROOT = Path(__file__).resolve().parents[3]

APP = str(Path(__file__).resolve().parents[3] / "app.py")


def test_default_spec_is_what_a_new_visitor_gets():
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    applied = DataSpec.from_state(at.session_state[state.APPLIED])
    assert applied.key() == default_spec().key()


def test_default_spec_follows_the_defaults(monkeypatch):
    monkeypatch.setitem(state.DEFAULTS, state.UPPER, 80.0)
    monkeypatch.setitem(state.DEFAULTS, state.SLOT_LENGTH, "15min")
    spec = default_spec()
    assert (spec.upper, spec.slot, spec.source.kind) == (80.0, "15min", "demo")


def test_warm_computes_what_a_new_visitors_first_map_asks_for(monkeypatch):
    from core.data import busiest_slot
    from dashboard.common.source import compute

    asked = []
    for name in ("report", "hats", "slot_cells", "cell_density"):
        real = getattr(compute, name)

        def spy(*args, _real=real, _name=name):
            asked.append((_name, args[0].key(), *args[1:]))
            return _real(*args)

        monkeypatch.setattr(compute, name, spy)
    warmup.warm()
    key = default_spec().key()
    slot = busiest_slot(compute.hats(default_spec()))
    assert asked[:4] == [
        ("report", key),
        ("hats", key),
        ("slot_cells", key, slot),
        ("cell_density", key),
    ]


def test_warm_also_pays_the_first_runs_costs_and_the_derived_panels_base(monkeypatch):
    """Besides the first map: Streamlit's first-run costs and the base of the Map's
    derived-mean panel (under the map), for the same slot."""
    from core.data import busiest_slot
    from dashboard.common.source import compute
    from dashboard.map import compute as map_compute

    done = []
    monkeypatch.setattr(warmup, "_streamlit_first_run", lambda: done.append("first run"))
    real_base = map_compute.base

    def base(spec, slot):
        done.append(("base", spec.key(), slot))
        return real_base(spec, slot)

    monkeypatch.setattr(map_compute, "base", base)
    warmup.warm()
    slot = busiest_slot(compute.hats(default_spec()))
    assert done == ["first run", ("base", default_spec().key(), slot)]


def test_lifespan_warms_in_the_background_and_serves_at_once(monkeypatch):
    started, release = threading.Event(), threading.Event()

    def slow_warm() -> None:
        started.set()
        release.wait(10)

    monkeypatch.setattr(warmup, "warm", slow_warm)

    async def serve() -> None:
        async with warmup.lifespan(None):
            assert started.wait(10)  # warming has begun …
            assert not release.is_set()  # … and the server is serving before it ends

    asyncio.run(serve())
    release.set()


def test_a_failing_warm_up_is_logged_and_changes_nothing(monkeypatch, caplog):
    def broken() -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(warmup, "warm", broken)
    warmup._warm_logged()
    assert "warming the demo city failed" in caplog.text


def test_warm_pays_streamlits_first_run_costs(monkeypatch):
    """The first element's once-only REPL check is done by the warm-up, not by the first
    visitor's run."""
    from streamlit import delta_generator, runtime

    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    monkeypatch.setattr(runtime, "exists", lambda: False)  # a bare Python: the check stays due
    warmup._streamlit_first_run()
    assert delta_generator._use_warning_has_been_displayed is False
    monkeypatch.setattr(runtime, "exists", lambda: True)  # `streamlit run`: never warns
    warmup._streamlit_first_run()
    assert delta_generator._use_warning_has_been_displayed is True


def test_the_first_page_never_imports_streamlits_emoji_catalogue():
    """app.py's first run (the Map on the demo city), in a fresh interpreter: no emoji icon
    anywhere, so Streamlit's emoji catalogue (≈ 35 ms, on the first map's critical path) is
    never imported; an emoji ``page_icon`` or element icon would import it."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import sys
        from streamlit.testing.v1 import AppTest
        at = AppTest.from_file("app.py", default_timeout=120).run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.get("deck_gl_json_chart"), "the Map did not draw its map"
        print("streamlit.emojis" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "False"
