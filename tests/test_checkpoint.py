"""Tests for pipeline.checkpoint: atomic save, strict and safe loading."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from models.net import (
    NET_STATE_FORMAT,
    PRESETS,
    AlphaZeroNet,
    ArchitectureMismatchError,
    net_state,
)
from pipeline import checkpoint
from pipeline.checkpoint import (
    CheckpointError,
    CheckpointNotFoundError,
    load_net,
    load_net_config,
    load_weights,
    save_net,
)
from tests.helpers.nets import binary_planes, tiny_net

TINY = PRESETS["tiny"]
EXECUTED: list[str] = []


pytestmark = pytest.mark.usefixtures("torch_threads")  # one torch thread (tests/conftest.py)


def _record(tag: str) -> str:
    """Side effect that must never run while loading a checkpoint."""
    EXECUTED.append(tag)
    return tag


class Payload:
    """Object whose unpickling would call :func:`_record`."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Ask pickle to call ``_record("executed")`` on load."""
        return (_record, ("executed",))


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A valid tiny checkpoint (with SE) on disk."""
    return save_net(tiny_net(config=TINY, se_ratio=4), tmp_path / "net.pt")


# ----------------------------------------------------------------- save/load


def test_round_trip(tmp_path: Path) -> None:
    net = tiny_net(config=TINY, se_ratio=4)
    path = save_net(net, tmp_path / "sub" / "net.pt")
    assert path == tmp_path / "sub" / "net.pt" and path.is_file()
    loaded = load_net(path, device="cpu")
    assert loaded.config == net.config == load_net_config(path)
    assert not loaded.training
    with torch.no_grad():
        for a, b in zip(net(binary_planes(3, seed=7)), loaded(binary_planes(3, seed=7)), strict=True):
            assert torch.equal(a, b)


def test_channels_last_net_round_trips(tmp_path: Path) -> None:
    net = tiny_net(config=TINY).to(memory_format=torch.channels_last)
    loaded = load_net(save_net(net, tmp_path / "cl.pt"))
    with torch.no_grad():
        torch.testing.assert_close(loaded(binary_planes(3, seed=7))[0], net(binary_planes(3, seed=7))[0])


def test_no_temp_file_left_and_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "net.pt"
    save_net(tiny_net(config=TINY, seed=0), path)
    save_net(tiny_net(config=TINY, seed=1), path)
    assert sorted(os.listdir(tmp_path)) == ["net.pt"]
    assert (path.stat().st_mode & 0o777) == checkpoint.CHECKPOINT_FILE_MODE
    expected = tiny_net(config=TINY, seed=1).state_dict()["stem.conv.weight"]
    assert torch.equal(load_net(path).state_dict()["stem.conv.weight"], expected)


def test_failed_save_keeps_old_file_and_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = save_net(tiny_net(config=TINY), tmp_path / "net.pt")
    before = path.read_bytes()

    def boom(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint.torch, "save", boom)
    with pytest.raises(OSError, match="disk full"):
        save_net(tiny_net(config=TINY, seed=3), path)
    assert sorted(os.listdir(tmp_path)) == ["net.pt"]
    assert path.read_bytes() == before


# ----------------------------------------------------------------- bad files


def test_missing_file_names_path(tmp_path: Path) -> None:
    path = tmp_path / "absent.pt"
    for load in (load_net, load_net_config):
        with pytest.raises(CheckpointNotFoundError, match="absent.pt") as info:
            load(path)
        assert isinstance(info.value, CheckpointError)
        assert isinstance(info.value, FileNotFoundError)


@pytest.mark.parametrize("kind", ["random", "empty", "truncated", "text"])
def test_corrupt_file_names_path(saved: Path, kind: str) -> None:
    data = saved.read_bytes()
    contents = {
        "random": os.urandom(4096),
        "empty": b"",
        "truncated": data[: len(data) // 2],
        "text": b"hello, I am not a checkpoint\n",
    }[kind]
    saved.write_bytes(contents)
    for load in (load_net, load_net_config):
        with pytest.raises(CheckpointError, match=re.escape(str(saved))):
            load(saved)


@pytest.mark.parametrize(
    "content",
    [
        {"format": "zerochess-net/0", "config": {}, "state_dict": {}},
        {"config": TINY.to_dict(), "state_dict": {}},
        {"format": NET_STATE_FORMAT, "config": {"depth": 3}, "state_dict": {}},
        [1, 2, 3],
    ],
)
def test_wrong_format_names_path(tmp_path: Path, content: object) -> None:
    path = tmp_path / "foreign.pt"
    torch.save(content, path)
    with pytest.raises(CheckpointError, match="foreign.pt.*not a zerochess checkpoint"):
        load_net(path)


def test_bare_state_dict_is_not_a_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "bare.pt"
    torch.save(tiny_net(config=TINY).state_dict(), path)
    with pytest.raises(CheckpointError, match="bare.pt"):
        load_net(path)


def test_arbitrary_pickle_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "evil.pt"
    torch.save({"format": NET_STATE_FORMAT, "payload": Payload()}, path)
    calls: list[dict[str, Any]] = []
    real_load = torch.load

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(checkpoint.torch, "load", spy)
    with pytest.raises(CheckpointError, match="evil.pt"):
        load_net(path)
    assert EXECUTED == []
    assert calls and all(kw.get("weights_only") is True for kw in calls)


# ----------------------------------------------------------------- architecture


def test_other_architecture_into_configured_net_names_both_shapes(tmp_path: Path) -> None:
    path = save_net(tiny_net(config=TINY), tmp_path / "small.pt")
    wide = AlphaZeroNet(dataclasses.replace(TINY, filters=32))
    with pytest.raises(ArchitectureMismatchError) as info:
        load_weights(wide, path)
    message = str(info.value)
    assert "small.pt" in message
    assert "stem.conv.weight: checkpoint (16, 119, 3, 3) vs model (32, 119, 3, 3)" in message


def test_load_weights_into_matching_net(saved: Path) -> None:
    target = tiny_net(config=TINY, seed=5, se_ratio=4)
    config = load_weights(target, saved)
    assert config == target.config
    with torch.no_grad():
        torch.testing.assert_close(target(binary_planes(3, seed=7))[1], load_net(saved)(binary_planes(3, seed=7))[1])


def test_inconsistent_checkpoint_names_path_and_parameter(tmp_path: Path) -> None:
    state = net_state(tiny_net(config=TINY))
    state["config"] = {**state["config"], "filters": 8}
    path = tmp_path / "inconsistent.pt"
    torch.save(state, path)
    with pytest.raises(
        ArchitectureMismatchError,
        match=r"inconsistent\.pt.*stem\.conv\.weight: "
        r"checkpoint \(16, 119, 3, 3\) vs model \(8, 119, 3, 3\)",
    ):
        load_net(path)
