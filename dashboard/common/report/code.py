"""Code for this view: the ``hexplorer`` commands and a Python snippet that recompute its numbers.

As OpenDP's DP Wizard does, the app writes the code a user would write to get the same numbers
without the app: the data preparation, the hexagon-hour, the worst-case error at (ε, m_UB) and at
m^(ε), and one simulated release per mechanism drawn from the same seed streams as the page
(:func:`dashboard.common.source.compute.rng_for`). The snippet prints JSON; a test runs it and
compares its output with the page.

The command line draws its simulated releases from ``numpy.random.default_rng(seed)``, not from
the page's per-mechanism streams, so its releases differ from the page's (its worst-case numbers
agree); the snippet reproduces both.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from core.data import ColumnMap
from core.mechanisms import MECHANISMS
from dashboard.common.source.compute import RNG_STREAMS


@dataclass(frozen=True, kw_only=True)
class View:
    """The parameters of a One-hexagon view.

    Attributes
    ----------
    source_kind : "demo" | "upload" | "path"
    source_name : str
        File name of an upload, path of a server file, "demo city" otherwise.
    columns : (user, lat, lon, time, value) column names.
    upper, resolution, slot, keep_zeros : the preparation (U, H3 resolution, timeslot).
    hat : "CELL/SLOT"
    epsilon : float
    m_ub : int
        The slider's m_UB (the worst-case numbers are at it).
    override : bool
        Whether every mechanism uses ``m_ub`` (else each its own default).
    mechanisms : tuple of names
    noise_measure : "mean" | "std"
    seed : int
    n_runs : int
        Simulated releases per mechanism behind the page's headline.
    within : float
        The ±X band of the headline's "share within".
    raw : bool
        Whether the headline is computed on raw releases (else clamped into [0, U]).
    """

    source_kind: str
    source_name: str
    columns: tuple[str, str, str, str, str]
    upper: float
    resolution: int
    slot: str
    keep_zeros: bool
    hat: str
    epsilon: float
    m_ub: int
    override: bool
    mechanisms: tuple[str, ...]
    noise_measure: str
    seed: int
    n_runs: int = 2000
    within: float = 1.0
    raw: bool = False

    def __post_init__(self) -> None:
        if self.source_kind not in ("demo", "upload", "path"):
            raise ValueError(
                f"The 'source_kind' parameter must be demo, upload or path. Got {self.source_kind!r}."
            )
        unknown = [n for n in self.mechanisms if n not in MECHANISMS]
        if unknown:
            raise ValueError(f"Unknown mechanisms: {', '.join(unknown)}.")


def _data_options(view: View) -> list[str]:
    out = []
    defaults = ColumnMap().as_tuple()
    for flag, name, default in zip(
        ("--user-col", "--lat-col", "--lon-col", "--time-col", "--value-col"),
        view.columns,
        defaults,
        strict=True,
    ):
        if name != default:
            out += [flag, name]
    if view.upper != 65.0:
        out += ["--upper", f"{view.upper:g}"]
    if view.resolution != 7:
        out += ["--resolution", str(view.resolution)]
    if view.slot != "1h":
        out += ["--slot", view.slot]
    if view.keep_zeros:
        out.append("--keep-zeros")
    out += ["--hat", view.hat]
    return out


def cli_commands(view: View) -> str:
    """The ``hexplorer`` commands for the view's worst-case numbers and simulated releases.

    >>> v = View(source_kind="demo", source_name="demo city",
    ...          columns=("user_id", "lat", "lon", "timestamp", "speed"), upper=65.0,
    ...          resolution=7, slot="1h", keep_zeros=False, hat="c/s", epsilon=0.5, m_ub=40,
    ...          override=False, mechanisms=("baseline",), noise_measure="mean", seed=0)
    >>> print(cli_commands(v))
    hexplorer worstcase --hat c/s --epsilon 0.5 --json
    hexplorer release --hat c/s --mechanism baseline --epsilon 0.5 --seed 0 --json
    """
    data = [] if view.source_kind == "demo" else [view.source_name]
    common = [*data, *_data_options(view)]
    lines = [["hexplorer", "worstcase", *common, "--epsilon", f"{view.epsilon:g}"]]
    if view.noise_measure != "mean":
        lines[0] += ["--noise-measure", view.noise_measure]
    lines[0].append("--json")
    for name in view.mechanisms:
        cmd = [
            "hexplorer",
            "release",
            *common,
            "--mechanism",
            name,
            "--epsilon",
            f"{view.epsilon:g}",
        ]
        if view.override and MECHANISMS[name].uses_m_ub:
            cmd += ["--m-ub", str(view.m_ub)]
        cmd += ["--seed", str(view.seed), "--json"]
        lines.append(cmd)
    return "\n".join(shlex.join(line) for line in lines)


def python_snippet(view: View) -> str:
    """A self-contained Python script printing the view's numbers as JSON.

    Keys: hat, users, records, true_mean, epsilon, m_ub, clipping_error, noise_error,
    worst_case_error, bestfit_bias, m_opt, worst_case_error_at_m_opt, releases (mechanism →
    {estimate, clamped, m_ub, noise_scale} or null when not applicable), headline (mechanism →
    {m_ub, typical, bound90, share_within, worst_case} at its own m_UB rule, as the page's
    headline, or null when not applicable).
    """
    user, lat, lon, time, value = view.columns
    if view.source_kind == "demo":
        load = "summaries = prepare(load_demo(), columns, config).summaries"
        imports = "from core.data import ColumnMap, PrepConfig, hat_data, load_demo, prepare"
    else:
        where = "the file you uploaded" if view.source_kind == "upload" else "the server's file"
        load = (
            f"# {where}: put it next to this script or give its full path\n"
            f"summaries = prepare_file({view.source_name!r}, columns, config).summaries"
        )
        imports = "from core.data import ColumnMap, PrepConfig, hat_data, prepare_file"
    release_stream = RNG_STREAMS["release"]
    distribution_stream = RNG_STREAMS["distribution"]
    m_ub_arg = "m_ub" if view.override else "None"
    return f'''"""Code for this view of dp-hexplorer (One hexagon): the same numbers as the page.

Run from the project's directory (or with dp-hexplorer installed): python this_file.py
"""

import json

from core import plan, worstcase
{imports}
from core.evaluation import error_summary
from core.errors import NotApplicableError
from core.mechanisms import mechanism_rng, release, run_mechanism
from core.postprocess import clamp_mean

columns = ColumnMap(user={user!r}, lat={lat!r}, lon={lon!r}, time={time!r}, value={value!r})
config = PrepConfig(upper={view.upper!r}, resolution={view.resolution!r}, slot={view.slot!r}, keep_zeros={view.keep_zeros!r})
{load}
hat = hat_data(summaries, {view.hat!r}, upper=config.upper)

epsilon, m_ub, noise_measure = {view.epsilon!r}, {view.m_ub!r}, {view.noise_measure!r}
parts = worstcase.worst_case_error(hat.counts, hat.upper, m_ub, epsilon, noise_measure=noise_measure)
m_opt = worstcase.m_opt(hat.counts, hat.upper, epsilon, noise_measure=noise_measure)
at_opt = worstcase.worst_case_error(hat.counts, hat.upper, m_opt, epsilon, noise_measure=noise_measure)
out = {{
    "hat": hat.hat,
    "users": hat.n_users,
    "records": hat.n_records,
    "true_mean": hat.true_mean,
    "epsilon": epsilon,
    "m_ub": m_ub,
    "clipping_error": float(parts.clipping),
    "noise_error": float(parts.noise),
    "worst_case_error": float(parts.total),
    "bestfit_bias": float(worstcase.bestfit_bias(hat.counts, hat.upper, m_ub)),
    "m_opt": int(m_opt),
    "worst_case_error_at_m_opt": float(at_opt.total),
    "releases": {{}},
    "headline": {{}},
}}

# One simulated release per mechanism, from the page's seed stream: (seed, {release_stream}) and its name.
seed = {view.seed!r}
for name in {list(view.mechanisms)!r}:
    rng = mechanism_rng([seed, {release_stream}], name)
    try:
        r = release(name, hat, epsilon, m_ub={m_ub_arg}, rng=rng)
    except NotApplicableError:
        out["releases"][name] = None
        continue
    out["releases"][name] = {{
        "estimate": r.estimate,
        "clamped": float(clamp_mean(r.estimate, hat.upper)),
        "m_ub": r.m_ub,
        "noise_scale": r.noise_scale,
    }}

# The headline: each mechanism at its own m_UB rule, {view.n_runs} simulated releases from the
# stream (seed, {distribution_stream}) and its name; typical error, 90 % bound, share within ±X.
n_runs, within, raw = {view.n_runs!r}, {view.within!r}, {view.raw!r}
for name in {list(view.mechanisms)!r}:
    rng = mechanism_rng([seed, {distribution_stream}], name)
    try:
        d = run_mechanism(name, hat, epsilon, rng=rng, size=n_runs)
    except NotApplicableError:
        out["headline"][name] = None
        continue
    values = d.estimates if raw else clamp_mean(d.estimates, hat.upper)
    s = error_summary(values, hat.true_mean, within=within)
    worst = None
    if name in plan.ANALYTIC_MECHANISMS:
        worst = plan.worst_case(hat.counts, hat.upper, epsilon, name, noise_measure).total
    out["headline"][name] = {{
        "m_ub": d.m_ub,
        "typical": s.median,
        "bound90": s.q90,
        "share_within": s.share_within,
        "worst_case": worst,
    }}

print(json.dumps(out, indent=2))
'''
