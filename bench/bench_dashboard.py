"""Rerun time of the One-hexagon page after moving ε or m_UB, on the demo city (target ≤ 250 ms).

Run by hand: ``python bench/bench_dashboard.py [--repeats N]``.

Uses Streamlit's AppTest (the script runs in-process, as on the server, without a browser; the
browser's own drawing time is not included). The demo city is prepared once first (warm data
cache); then ε is moved through slider stops it has not visited yet (so every rerun recomputes
the ε-dependent numbers: worst-case figures, one release and the 2,000-run spread per default
mechanism), and m_UB likewise. Reported: the median and max of those reruns, and of reruns that
revisit a value already seen (everything cached).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from dashboard.common.session import state  # noqa: E402
from dashboard.hexagon import state as hs  # noqa: E402

TARGET_MS = 250.0


def _timed(at: AppTest) -> float:
    start = time.perf_counter()
    at.run()
    elapsed = (time.perf_counter() - start) * 1000.0
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=8, help="reruns per measured series")
    args = parser.parse_args(argv)

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    start = time.perf_counter()
    at.run()
    at.switch_page("dashboard/hexagon/page.py").run()
    print(f"first load (prepares the demo city): {time.perf_counter() - start:.1f} s")
    for _ in range(2):  # warm everything that does not depend on ε or m_UB
        _timed(at)

    here = hs.EPSILON_STOPS.index(1.0)
    eps_stops = list(hs.EPSILON_STOPS[here - 1 :: -1])  # 0.99, 0.98, …: every stop new
    new_eps = []
    for eps in eps_stops[: args.repeats]:
        at.select_slider(key=hs.EPSILON_SLIDER).set_value(eps)
        new_eps.append(_timed(at))
    seen_eps = []
    for eps in eps_stops[: args.repeats]:
        at.select_slider(key=hs.EPSILON_SLIDER).set_value(eps)
        seen_eps.append(_timed(at))

    slider = at.slider(key=state.M_UB)
    lo, hi = slider.min, slider.max
    values = sorted({lo + (hi - lo) * (i + 1) // (args.repeats + 1) for i in range(args.repeats)})
    new_m = []
    for m in values:
        at.slider(key=state.M_UB).set_value(m)
        new_m.append(_timed(at))
    at.toggle(key=state.OVERRIDE_M_UB).set_value(True)
    _timed(at)
    override_m = []
    for m in values:
        at.slider(key=state.M_UB).set_value(m + 1 if m + 1 <= hi else m - 1)
        override_m.append(_timed(at))

    def line(name: str, xs: list[float]) -> str:
        med = statistics.median(xs)
        return f"{name:<52} median {med:7.1f} ms   max {max(xs):7.1f} ms   (n = {len(xs)})"

    print(line("move ε to a new stop", new_eps))
    print(line("move ε to a stop already visited (all cached)", seen_eps))
    print(line("move m_UB (mechanisms use their defaults)", new_m))
    print(line("move m_UB with 'use this m_UB for every mechanism'", override_m))
    overall = statistics.median(new_eps + new_m)
    verdict = "meets" if overall <= TARGET_MS else "MISSES"
    print(f"rerun after moving ε or m_UB: median {overall:.1f} ms ({verdict} {TARGET_MS:.0f} ms)")
    print(
        "Machine caveat: numbers depend on the machine and its load; browser drawing not included."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
