"""dashboard.common.session.url: the query string <-> session state mapping (no Streamlit run
needed)."""

from __future__ import annotations

import pytest

from dashboard.common.session import state, url

HAT = "8742d9d69ffffff/2024-03-05T15:00"


def test_parse_reads_every_parameter():
    values, bad = url.parse(
        {
            "source": "demo", "U": "80", "res": "8", "slot": "30min", "zeros": "1", "hat": HAT,
            "eps": "0.5423", "m_ub": "40", "all_m_ub": "1", "mech": "levy,baseline",
            "noise": "std", "seed": "7", "runs": "10000", "user": "bus-1", "lmech": "akmv",
        }
    )  # fmt: skip
    assert bad == []
    assert values[state.SOURCE] == "demo" and values[state.UPPER] == 80.0
    assert values[state.RESOLUTION] == 8 and values[state.SLOT_KIND] == "window"
    assert values[state.SLOT_LENGTH] == "30min" and values[state.KEEP_ZEROS] is True
    assert values[state.HAT] == HAT and values[state.EPSILON] == 0.5423
    assert values[state.M_UB] == 40 and values[state.M_UB_FOR] == HAT
    assert values[state.OVERRIDE_M_UB] is True and values[state.MECHANISMS] == ["levy", "baseline"]
    assert values[state.NOISE_MEASURE] == "std" and values[state.SEED] == 7
    assert values[state.MANY_RUNS] is True
    assert values[url.LESSON_USER] == "bus-1" and values[url.LESSON_MECHANISM] == "akmv"


@pytest.mark.parametrize(
    "name, text",
    [
        ("eps", "abc"), ("eps", "-1"), ("eps", "nan"), ("eps", "inf"), ("res", "16"),
        ("res", "7.5"), ("U", "0"), ("slot", "7min"), ("zeros", "yes"), ("hat", "nothex/h08"),
        ("hat", "8742d9d69ffffff"), ("mech", "baseline,magic"), ("noise", "max"), ("seed", "-3"),
        ("runs", "5"), ("source", "ftp"), ("file", "xyz"), ("lmech", "nope"),
    ],
)  # fmt: skip
def test_a_bad_value_is_ignored_and_named(name, text):
    values, bad = url.parse({name: text, "seed": "3"} if name != "seed" else {name: text})
    assert len(bad) == 1 and bad[0].startswith(f"{name}=")
    assert all(k not in values for k in (state.EPSILON, state.RESOLUTION, state.HAT)) or (
        name not in ("eps", "res", "hat")
    )


def test_m_ub_without_its_hat_is_ignored():
    values, bad = url.parse({"m_ub": "30"})
    assert state.M_UB not in values and "m_ub" in bad[0]


def test_unknown_names_are_ignored_silently():
    assert url.parse({"embed": "true", "utm_source": "mail"}) == ({}, [])


def test_encode_then_parse_gives_the_same_state():
    ss = {
        state.SOURCE: "demo", state.UPPER: 65.0, state.RESOLUTION: 7, state.SLOT_KIND: "window",
        state.SLOT_LENGTH: "1h", state.KEEP_ZEROS: False, state.HAT: HAT, state.EPSILON: 0.25,
        state.M_UB: 46, state.M_UB_FOR: HAT, state.OVERRIDE_M_UB: False,
        state.MECHANISMS: ["opt-bounding", "baseline"], state.NOISE_MEASURE: "mean",
        state.SEED: 0, state.MANY_RUNS: False, url.LESSON_USER: "bus-3",
        url.LESSON_MECHANISM: "levy",
    }  # fmt: skip
    values, bad = url.parse(url.encode(ss))
    assert bad == []
    expected = dict(ss, **{state.MECHANISMS: ["baseline", "opt-bounding"], url.LINK_HAT: HAT})
    assert values == expected


def test_hour_of_day_slot_round_trips():
    params = url.encode({state.SLOT_KIND: "hour-of-day", state.SLOT_LENGTH: "1h"})
    assert params == {"slot": "hour-of-day"}
    assert url.parse(params)[0] == {state.SLOT_KIND: "hour-of-day"}


def test_an_upload_is_linked_by_its_content_digest():
    digest = "ab" * 32
    applied = {"source": {"kind": "upload", "name": "ships.csv", "digest": digest}}
    params = url.encode({state.SOURCE: "upload", state.APPLIED: applied})
    assert params == {"source": "upload", "file": digest[:16], "name": "ships.csv"}
    values, bad = url.parse(params)
    assert bad == [] and values[url.LINK_FILE] == digest[:16]
    # Not loaded yet: the link keeps the digest it was opened with.
    again = url.encode({state.SOURCE: "upload", state.APPLIED: None, **values})
    assert again["file"] == digest[:16] and again["name"] == "ships.csv"


def test_link_orders_parameters_and_keeps_hat_readable():
    got = url.link("http://h:1/one_hexagon", {"eps": "1", "hat": HAT, "source": "demo"})
    assert got == f"http://h:1/one_hexagon?source=demo&hat={HAT}&eps=1"


def test_the_modules_examples_run():
    import doctest

    assert doctest.testmod(url).failed == 0


class _Params:
    """``st.query_params`` as a run sees it: the URL its request came with; what it writes."""

    def __init__(self, request: dict[str, str]) -> None:
        self.request, self.written = dict(request), []

    def to_dict(self) -> dict[str, str]:
        return dict(self.request)

    def from_dict(self, params: dict[str, str]) -> None:
        self.written.append(dict(params))
        self.request = dict(params)


def test_the_run_after_a_write_writes_again(monkeypatch):
    """Quick ε taps on a loaded machine: the run for 1.3 (its request came with the URL of 1.1)
    writes eps=1.3, and its message reaches the browser after the next request left carrying
    the slider's own URL, eps=1.2. The run for 1.2 finds its URL equal to its request's: written
    anyway, once, so the browser's last word is 1.2; the run after that writes nothing."""
    from types import SimpleNamespace

    session: dict = {}
    fake = SimpleNamespace(session_state=session, query_params=None)
    monkeypatch.setattr(url, "st", fake)
    monkeypatch.setattr(url, "encode", lambda ss: {"eps": ss["eps"]})
    runs = [("1.1", "1.3"), ("1.2", "1.2"), ("1.2", "1.2")]  # (the request's URL, the view)
    written = []
    for request, view in runs:
        fake.query_params = _Params({"eps": request})
        session["eps"] = view
        url.write()
        written.append(fake.query_params.written)
    assert written == [[{"eps": "1.3"}], [{"eps": "1.2"}], []]
