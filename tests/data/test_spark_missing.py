"""Without PySpark or Java the Spark engine says so in one line (runs whether or not it is installed)."""

from __future__ import annotations

import sys

import pytest

from core.cli import main
from core.data import spark as spark_engine
from core.errors import HexplorerError


def test_without_pyspark_the_engine_says_so(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark -> ImportError
    with pytest.raises(HexplorerError, match=r"needs PySpark: pip install -e \"\.\[spark\]\""):
        spark_engine.check_spark()
    src = tmp_path / "r.csv"
    src.write_text("user_id,lat,lon,timestamp,speed\nu,21.2,72.8,2024-03-05 08:10,30\n")
    status = main(
        ["prepare", str(src), "--engine", "spark", "--output", str(tmp_path / "s.parquet")]
    )
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "needs PySpark" in err


def test_without_java_the_engine_says_so(monkeypatch):
    pytest.importorskip("pyspark", reason="PySpark is not installed")
    monkeypatch.setattr(spark_engine.shutil, "which", lambda name: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(HexplorerError, match="needs Java"):
        spark_engine.check_spark()
