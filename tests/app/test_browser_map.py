"""Real browser (Playwright + Debian's Chromium) on the Map's error views: choosing *error at ε*
and moving ε changes the map's pixels; a click on a hexagon of the error map selects its HAT and
only outlines it; the split view shows two maps in one canvas, and a drag in one pans both.

Without Chromium at /usr/bin/chromium (or without Playwright) the tests fail when the CI
environment variable is set and are skipped otherwise.
"""

from __future__ import annotations

import io
import re

import pytest
from browser_server import (
    DECK,
    LIVE_MAP,
    ROOT,
    HeldMessages,
    centre_hat,
    chromium_page,
    click_map_centre,
    click_until,
    error_map_canvas,
    open_error_map,
    streamlit_server,
)

from dashboard.common.view.ui import legend_key
from dashboard.map import state as ms

ARTIFACTS = ROOT / "test-artifacts"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server():
    with streamlit_server(ARTIFACTS / "streamlit-browser-map.log") as url:
        yield url


def _pixels(png: bytes):
    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def _coloured(img, tolerance: int = 40) -> int:
    """Pixels that are neither white nor grey (hexagons in a palette colour)."""
    spread = img.max(axis=2) - img.min(axis=2)
    return int((spread > tolerance).sum())


def _palette_shares(img, tolerance: int = 40) -> dict:
    """Share of the coloured pixels (:func:`_coloured`) per colour, to 1/16 of each channel."""
    import numpy as np

    spread = img.max(axis=2) - img.min(axis=2)
    colours = (img[spread > tolerance] // 16).astype(int)
    keys, counts = np.unique(colours, axis=0, return_counts=True)
    return {tuple(k): c / counts.sum() for k, c in zip(keys.tolist(), counts, strict=True)}


def _differ(a: dict, b: dict) -> float:
    """Half the L1 distance of two colour shares (0: the same colours in the same amounts)."""
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def _settled(locator, page, *, differs_from=None, tries: int = 40):
    """The canvas's pixels once two screenshots a moment apart agree (and, if given, differ
    from ``differs_from``)."""
    import numpy as np

    last = _pixels(locator.screenshot())
    for _ in range(tries):
        page.wait_for_timeout(500)
        now = _pixels(locator.screenshot())
        same = now.shape == last.shape and np.array_equal(now, last)
        if same and _coloured(now) > 0:
            if differs_from is None or now.shape != differs_from.shape:
                return now
            if not np.array_equal(now, differs_from):
                return now
        last = now
    return last


def _no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0


def _open_error_map(page, expect, server) -> None:
    open_error_map(page, server, timeout_ms=240_000)
    expect(page.get_by_text("Hexagons within ±5 km/h")).to_be_visible(timeout=120_000)
    _no_exception(page)


def test_error_at_epsilon_and_moving_epsilon_change_the_maps_pixels(server):
    import numpy as np

    with chromium_page(ARTIFACTS / "browser-error-map-failure.png", height=1100) as (page, expect):
        page.goto(server, wait_until="domcontentloaded", timeout=60_000)
        canvas = page.locator(f"{DECK} canvas").first
        expect(canvas).to_be_visible(timeout=240_000)
        records = _settled(canvas, page)
        page.get_by_text("error at ε (km/h)").click()
        expect(page.get_by_text("Hexagons within ±5 km/h")).to_be_visible(timeout=120_000)
        canvas = error_map_canvas(page)
        at_one = _settled(canvas, page, differs_from=records)
        assert not np.array_equal(at_one, records)  # error colours, not record counts
        share = page.locator('[data-testid="stMetricValue"]').first.inner_text()

        thumb = page.get_by_role("slider", name="ε per hexagon (log scale)", exact=True)
        thumb.focus()
        for _ in range(6):  # 1 → 0.3: much more error
            thumb.press("ArrowLeft")
        at_small = _settled(canvas, page, differs_from=at_one)
        assert not np.array_equal(at_small, at_one)
        changed = np.any(at_small != at_one, axis=2).mean()
        assert changed > 0.001, changed
        expect(page.locator('[data-testid="stMetricValue"]').first).not_to_have_text(
            share, timeout=30_000
        )
        _no_exception(page)
        page.screenshot(path=str(ARTIFACTS / "browser-error-map.png"))


def test_moving_epsilon_recolours_the_error_map_before_the_rerun_as_the_rerun_draws_it(server):
    """The browser's ε slider recolours the error map from the frames document while no
    message can reach the server (held): the map, the panel beside it (its shares and the
    caption naming ε) and the legend's counts show the new ε at once. Once the stop reaches the server, its rerun
    leaves the map as the browser drew it (the same pixels) and the panel as it wrote it."""
    import numpy as np

    failure = ARTIFACTS / "browser-error-map-live-failure.png"
    with chromium_page(failure, height=1100) as (page, expect):
        held = HeldMessages(page)
        _open_error_map(page, expect, server)
        live = page.locator(LIVE_MAP)
        expect(live).to_have_attribute("data-stop", "1", timeout=60_000)
        canvas = error_map_canvas(page)
        page.mouse.move(1, 1)
        at_one = _settled(canvas, page)
        readout = page.get_by_text("ε = 1, opt-arrayavg, mean noise measure.")
        expect(readout).to_be_visible()
        side = page.locator(f".st-key-{ms.LIVE_SIDE}")
        shares = side.locator('[data-testid="stMetricValue"]')
        at_one_shares = shares.all_inner_texts()
        legend = page.locator(f".st-key-{ms.LIVE_LEGEND} li")
        at_one_legend = legend.all_inner_texts()

        thumb = page.get_by_role("slider", name="ε per hexagon (log scale)", exact=True)
        thumb.focus()
        page.wait_for_timeout(3_000)  # the focus asked for the document: fetched by now
        held.hold()
        for _ in range(6):
            thumb.press("ArrowLeft")
        eps = str(thumb.get_attribute("aria-valuetext"))
        assert float(eps) < 1
        expect(live).to_have_attribute("data-stop", re.compile(rf"^{re.escape(eps)}$"))
        expect(page).to_have_url(re.compile(rf"[?&]eps={re.escape(eps)}(&|$)"))  # a reload keeps it
        drawn = _settled(canvas, page, differs_from=at_one)
        assert np.any(drawn != at_one, axis=2).mean() > 0.01  # recoloured by the browser
        caption = f"ε = {eps}, opt-arrayavg, mean noise measure."
        expect(side.get_by_text(caption)).to_be_visible()  # the panel, too …
        written = shares.all_inner_texts()
        assert written != at_one_shares  # (fewer hexagons within ±5 km/h at a smaller ε)
        counted = legend.all_inner_texts()  # … and the legend's counts
        assert counted != at_one_legend and len(counted) == len(at_one_legend) == 2
        assert all(t.count("outline") == 1 and t.count("hexagon") == 1 for t in counted), counted
        held.wait_for_one("the slider's stop")  # … and no rerun yet
        expect(live).to_have_attribute("aria-label", re.compile(r"at ε = 1 \(opt-arrayavg\)$"))

        held.release()
        # the rerun: the map's label, which only a rerun writes, names the new ε
        label = re.compile(rf"at ε = {re.escape(eps)} \(opt-arrayavg\)$")
        expect(live).to_have_attribute("aria-label", label, timeout=60_000)
        page.wait_for_timeout(1_000)
        after = _settled(canvas, page)
        assert np.array_equal(after, drawn)  # the rerun's map is the one the browser drew
        assert shares.all_inner_texts() == written  # and its panel the one the browser wrote
        assert legend.all_inner_texts() == counted
        expect(side.get_by_text(caption)).to_be_visible()
        _no_exception(page)


def test_an_automatic_scales_legend_is_faded_until_the_rerun_draws_it(server):
    """With an automatic scale the legend's bins move with ε and only the rerun draws them:
    while the browser's slider is ahead of the server (messages held) the legend is faded,
    then whole again once the rerun has drawn it at the new ε. A fixed scale's legend is
    never faded (it does not move with ε)."""
    legend = legend_key(ms.SCALE_LEGEND)
    opacity = f"() => getComputedStyle(document.querySelector('.st-key-{legend}')).opacity"
    with chromium_page(ARTIFACTS / "browser-error-map-legend-failure.png", height=1100) as (
        page,
        expect,
    ):
        held = HeldMessages(page)
        _open_error_map(page, expect, server)
        live = page.locator(LIVE_MAP)
        thumb = page.get_by_role("slider", name="ε per hexagon (log scale)", exact=True)
        thumb.focus()
        page.wait_for_timeout(2_000)
        thumb.press("ArrowLeft")  # a fixed scale: never faded, the rerun comes
        first = re.escape(str(thumb.get_attribute("aria-valuetext")))
        page.wait_for_timeout(200)
        assert page.evaluate(opacity) == "1"
        expect(live).to_have_attribute(
            "aria-label", re.compile(rf"at ε = {first} "), timeout=60_000
        )
        page.get_by_text("Automatic scale").click()
        expect(page.get_by_text(re.compile(rf"^ε = {first}, opt-arrayavg"))).to_be_visible(
            timeout=60_000
        )
        page.wait_for_timeout(1_000)
        thumb.focus()
        page.wait_for_timeout(2_000)
        held.hold()
        thumb.press("ArrowLeft")
        second = re.escape(str(thumb.get_attribute("aria-valuetext")))
        assert second != first
        page.wait_for_function(f"() => ({opacity})() === '0.45'", timeout=5_000)
        held.wait_for_one("the slider's stop")
        held.release()
        expect(live).to_have_attribute(
            "aria-label", re.compile(rf"at ε = {second} "), timeout=60_000
        )
        page.wait_for_function(f"() => ({opacity})() === '1'", timeout=30_000)
        _no_exception(page)


def test_split_view_shows_two_maps_that_pan_together(server):
    import numpy as np

    with chromium_page(ARTIFACTS / "browser-split-view-failure.png", height=1100) as (page, expect):
        _open_error_map(page, expect, server)
        page.get_by_text("Two settings side by side").click()
        expect(page.get_by_text("Left A (ε = 1, opt-arrayavg)")).to_be_visible(timeout=120_000)
        split = page.locator(f"{DECK} canvas").first  # the split view (Streamlit's map element)
        split.scroll_into_view_if_needed()
        expect(split).to_be_visible(timeout=60_000)
        before = _settled(split, page)
        w = before.shape[1]
        left, right = before[:, : int(w * 0.49)], before[:, int(w * 0.51) :]
        assert _coloured(left) > 50 and _coloured(right) > 50  # two maps
        # … in their own colours: ε = 2 on the right puts more hexagons in the lower
        # error classes than ε = 1 on the left (the same map twice would score ≈ 0)
        assert _differ(_palette_shares(left), _palette_shares(right)) > 0.15

        box = split.bounding_box()
        x0, y0 = box["x"] + box["width"] * 0.25, box["y"] + box["height"] * 0.5
        page.mouse.move(x0, y0)
        page.mouse.down()
        for step in range(1, 11):
            page.mouse.move(x0 + 12 * step, y0 + 6 * step)
        page.mouse.up()
        after = _settled(split, page, differs_from=before)
        h, w = after.shape[:2]
        moved_left = np.any(after[:, : int(w * 0.49)] != before[:, : int(w * 0.49)], axis=2)
        moved_right = np.any(after[:, int(w * 0.51) :] != before[:, int(w * 0.51) :], axis=2)
        assert moved_left.mean() > 0.001 and moved_right.mean() > 0.001, (
            moved_left.mean(),
            moved_right.mean(),
        )
        _no_exception(page)
        page.screenshot(path=str(ARTIFACTS / "browser-split-view.png"))


def test_the_split_view_and_its_settings_survive_a_visit_to_another_page(server):
    """Split on, comparing two mechanisms; One hexagon; back on the Map: the same split view
    (its widgets live in a fragment, whose values Streamlit resets while another page runs)."""
    failure = ARTIFACTS / "browser-split-kept-failure.png"
    with chromium_page(failure, height=1100) as (page, expect):
        _open_error_map(page, expect, server)
        page.get_by_text("Two settings side by side").click()
        expect(page.get_by_text("Left A (ε = 1, opt-arrayavg)")).to_be_visible(timeout=120_000)
        page.get_by_text("mechanism A vs B").click()
        expect(page.get_by_text("right B (ε = 1, opt-bounding)")).to_be_visible(timeout=120_000)
        page.get_by_role("link", name="One hexagon").click()
        expect(page.get_by_role("heading", name="One hexagon").first).to_be_visible(timeout=120_000)
        page.get_by_role("link", name="Map").click()
        expect(page.get_by_role("heading", name="Map").first).to_be_visible(timeout=120_000)
        expect(page.get_by_text("right B (ε = 1, opt-bounding)")).to_be_visible(timeout=120_000)
        expect(page.get_by_role("radio", name="mechanism A vs B")).to_be_checked()
        expect(page.get_by_text("Hexagons within ±5 km/h").first).to_be_visible()  # error map
        _no_exception(page)


def test_click_on_the_error_map_selects_the_hexagon_and_keeps_the_legend_colours(server):
    """The error map's rows carry only the cell: a click names the cell in the page's slot. The
    page's read-out and hexagon box follow; the map's fills keep the legend's colours and the
    selection is only an outline (Streamlit's own selection would repaint every hexagon)."""
    import numpy as np

    from dashboard.common.view.maps import SELECTED_COLOR

    expected = centre_hat()
    if expected is None:
        pytest.skip("no hexagon under the map's centre other than the one selected on opening")
    cell = expected.split("/", 1)[0]
    failure = ARTIFACTS / "browser-error-map-click-failure.png"
    with chromium_page(failure, height=1100) as (page, expect):
        _open_error_map(page, expect, server)
        canvas = error_map_canvas(page)
        page.mouse.move(1, 1)  # no hover highlight in the pictures
        before = _settled(canvas, page)

        click_map_centre(page, expect, page.get_by_text(f"Selected HAT: {expected}"))
        box = page.get_by_role("combobox", name="Hexagon (most records first)")
        expect(box).to_have_value(re.compile(f"^{cell} — "), timeout=30_000)
        expect(page.get_by_text("error at ε (km/h)").first).to_be_visible()
        page.mouse.move(1, 1)
        after = _settled(error_map_canvas(page), page, differs_from=before)

        def outline(img):
            return np.all(img == SELECTED_COLOR, axis=2)

        def near(mask, px: int = 4):
            out = mask.copy()
            for dy in range(-px, px + 1):
                for dx in range(-px, px + 1):
                    out |= np.roll(np.roll(mask, dy, axis=0), dx, axis=1)
            return out

        def middle(mask):  # the centre of an outline's pixels (y, x)
            assert mask.sum() > 20, mask.sum()
            return np.argwhere(mask).mean(axis=0)

        h, w = after.shape[:2]
        now, then = middle(outline(after)), middle(outline(before))  # ring of the HAT
        # the clicked hexagon holds the map's centre: its ring is around it, and the
        # ring of the HAT selected on opening (another hexagon) has gone
        assert np.hypot(*(now - (h / 2, w / 2))) < 35, (now, h, w)
        assert np.hypot(*(now - then)) > 25, (now, then)
        moved = near(outline(before) | outline(after))
        changed = np.any(after != before, axis=2) & ~moved
        assert changed.mean() < 0.002, changed.mean()  # nothing else is repainted

        def codes(img):
            return (img[..., 0] << 16) | (img[..., 1] << 8) | img[..., 2]

        kept = np.isin(codes(after[~moved]), codes(before))  # the legend's colours
        assert kept.mean() > 0.999, kept.mean()
        _no_exception(page)
        page.screenshot(path=str(ARTIFACTS / "browser-error-map-click.png"))


def _wide_city(path) -> str:
    """Three resolution-7 hexagons 6° of longitude apart (hexagons ~1 px wide at the fitted
    view: drawn as dots only); the middle one has the fewest records, so it is not the HAT
    selected on opening. Returns the middle cell."""
    import h3
    import pandas as pd

    frames = []
    cells = [h3.latlng_to_cell(22.0, lon, 7) for lon in (73.0, 79.0, 85.0)]
    for k, cell in enumerate(cells):
        lat, lon = h3.cell_to_latlng(cell)
        users, per_user = (3, 2) if k == 1 else (6, 5)
        n = users * per_user
        frames.append(
            pd.DataFrame(
                {
                    "user_id": [f"v{k}{u}" for u in range(users) for _ in range(per_user)],
                    "lat": lat,
                    "lon": lon,
                    "timestamp": pd.Timestamp("2024-03-05 08:00")
                    + pd.to_timedelta(range(n), unit="min"),
                    "speed": [20.0 + i % 30 for i in range(n)],
                }
            )
        )
    pd.concat(frames, ignore_index=True).to_csv(path, index=False)
    return cells[1]


def test_a_click_on_a_dot_of_a_wide_error_map_selects_its_hexagon(tmp_path):
    """Hexagons smaller than a dot are drawn as dots only, and the dots answer the mouse: a
    click on the middle dot of a country-wide file selects that hexagon's HAT."""
    import os

    import numpy as np

    cell = _wide_city(tmp_path / "wide.csv")
    env = {**os.environ, "HEXPLORER_DATA_DIR": str(tmp_path)}
    log = ARTIFACTS / "streamlit-browser-map-wide.log"
    failure = ARTIFACTS / "browser-error-map-wide-failure.png"
    with (
        streamlit_server(log, env=env) as url,
        chromium_page(failure, height=1100) as (page, expect),
    ):
        open_error_map(page, f"{url}/?source=path&path=wide.csv", timeout_ms=240_000)
        _no_exception(page)
        expect(page.get_by_text(re.compile(r"each is shown by a dot"))).to_be_visible()
        expect(page.get_by_text(re.compile(f"Selected HAT: {cell}/"))).to_have_count(0)
        canvas = error_map_canvas(page)
        page.mouse.move(1, 1)
        img = _settled(canvas, page)
        drawn = img.sum(axis=2) < 720  # anything but the white page
        columns = np.flatnonzero(drawn.any(axis=0))
        runs = np.split(columns, np.flatnonzero(np.diff(columns) > 3) + 1)
        assert len(runs) == 3, [(r[0], r[-1]) for r in runs]  # three dots, left to right
        xs = runs[1]
        ys = np.flatnonzero(drawn[:, xs[0] : xs[-1] + 1].any(axis=1))
        box = canvas.bounding_box()
        x, y = box["x"] + xs.mean(), box["y"] + ys.mean()
        shown = page.get_by_text(re.compile(f"Selected HAT: {cell}/"))
        click_until(page, expect, shown, lambda: (x, y))
        _no_exception(page)
