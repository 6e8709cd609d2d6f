"""``zerochess export --onnx``: batch-norm folding, the ONNX file run by ONNX
Runtime, and the command end to end with its bad inputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from models.net import AlphaZeroNet, NetConfig
from pipeline.checkpoint import save_net
from tests.helpers.nets import random_planes
from zerochess.cli import main
from pipeline.export import (
    INPUT_NAME,
    ONNX_FORMAT,
    OUTPUT_NAMES,
    ExportError,
    check_out_path,
    export_onnx,
    fold_batch_norm,
    onnxruntime_outputs,
    sample_planes,
)

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")

CONFIGS = {
    "az4672": NetConfig.preset("tiny"),
    "lc0_1858": NetConfig.preset("tiny", policy_encoding="lc0_1858"),
    "se": NetConfig.preset("tiny", se_ratio=4),
    "wdl": NetConfig.preset("tiny", value_head="wdl"),
    "soft_policy": NetConfig.preset("tiny", soft_policy=True),
}


def trained_looking(config: NetConfig, seed: int = 0) -> AlphaZeroNet:
    """A net in eval mode whose batch norms have non-trivial running statistics
    and affine parameters (a fresh net's are 0/1, which folding would not test)."""
    torch.manual_seed(seed)
    net = AlphaZeroNet(config)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, nn.BatchNorm2d):
                channels = module.num_features
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.2, 3.0)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.3, 0.3)
                assert module.running_mean.shape == (channels,)
    return net.eval()


def outputs(net: nn.Module, planes: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    with torch.no_grad():
        policy, value = net(planes)
    return policy.numpy(), value.numpy()


# ---------------------------------------------------------------- folding


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_folded_net_matches_the_original(name: str) -> None:
    net = trained_looking(CONFIGS[name])
    folded = fold_batch_norm(net)
    planes = random_planes(5, seed=1)
    want, got = outputs(net, planes), outputs(folded, planes)
    assert got[0].shape == (5, CONFIGS[name].policy_size) and got[1].shape == (5,)
    np.testing.assert_allclose(got[0], want[0], atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(got[1], want[1], atol=1e-5)
    assert not any(isinstance(m, nn.BatchNorm2d) for m in folded.modules())
    assert any(isinstance(m, nn.BatchNorm2d) for m in net.modules())  # the original is unchanged


def test_folding_uses_running_statistics_even_from_a_training_mode_net() -> None:
    net = trained_looking(CONFIGS["az4672"]).train()
    folded = fold_batch_norm(net)
    assert not folded.training and net.training
    planes = random_planes(3, seed=1)
    want = outputs(net.eval(), planes)[0]
    np.testing.assert_allclose(outputs(folded, planes)[0], want, atol=1e-4, rtol=1e-4)


def test_fold_refuses_another_module() -> None:
    with pytest.raises(TypeError, match="AlphaZeroNet"):
        fold_batch_norm(nn.Linear(2, 2))  # type: ignore[arg-type]


# ---------------------------------------------------------------- the ONNX file


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[AlphaZeroNet, Path]]:
    folder = tmp_path_factory.mktemp("onnx")
    files = {}
    for name, config in CONFIGS.items():
        net = trained_looking(config, seed=len(files))
        files[name] = (net, export_onnx(net, folder / f"{name}.onnx"))
    return files


@pytest.mark.parametrize("batch", [1, 7])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_onnxruntime_matches_torch(exported: dict, name: str, batch: int) -> None:
    net, path = exported[name]
    planes = random_planes(batch, seed=batch)
    want = outputs(net, planes)
    policy, value = onnxruntime_outputs(path, planes.numpy())
    assert policy.shape == (batch, net.policy_size) and value.shape == (batch,)
    np.testing.assert_allclose(policy, want[0], atol=1e-4, rtol=0)
    np.testing.assert_allclose(value, want[1], atol=1e-4, rtol=0)


def test_graph_has_named_dynamic_io_no_batch_norm_and_the_config(exported: dict) -> None:
    net, path = exported["lc0_1858"]
    model = onnx.load(str(path))
    inputs = {i.name: i for i in model.graph.input}
    assert list(inputs) == [INPUT_NAME]
    assert [o.name for o in model.graph.output] == list(OUTPUT_NAMES)
    dims = inputs[INPUT_NAME].type.tensor_type.shape.dim
    assert dims[0].dim_param and [d.dim_value for d in dims[1:]] == [119, 8, 8]
    assert inputs[INPUT_NAME].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert all(o.type.tensor_type.shape.dim[0].dim_param for o in model.graph.output)
    assert "BatchNormalization" not in {node.op_type for node in model.graph.node}
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["format"] == ONNX_FORMAT
    assert NetConfig.from_dict(json.loads(meta["net_config"])) == net.config
    assert meta["policy_encoding"] == "lc0_1858" and meta["policy_size"] == "1858"


def test_export_replaces_a_file_atomically_and_leaves_no_temp(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "net.onnx"
    out.parent.mkdir()
    out.write_bytes(b"old")
    export_onnx(trained_looking(CONFIGS["az4672"]), out)
    assert onnx.load(str(out)).graph.input[0].name == INPUT_NAME
    assert sorted(p.name for p in out.parent.iterdir()) == ["net.onnx"]


def test_export_to_a_folder_names_it(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=str(tmp_path)):
        export_onnx(trained_looking(CONFIGS["az4672"]), tmp_path)


def test_a_file_in_the_way_is_named_before_any_export(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(ExportError, match=f"{tmp_path / 'a_file'} is not a folder"):
        check_out_path(tmp_path / "a_file" / "sub" / "net.onnx")
    assert check_out_path(tmp_path / "new" / "net.onnx") == tmp_path / "new" / "net.onnx"


def test_sample_planes_are_encoded_positions() -> None:
    planes = sample_planes(4, seed=3)
    assert planes.shape == (4, 119, 8, 8) and planes.dtype == np.uint8
    np.testing.assert_array_equal(planes, sample_planes(4, seed=3))


# ---------------------------------------------------------------- the command


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    return save_net(trained_looking(CONFIGS["se"]), tmp_path / "net.pt")


def test_cli_exports_and_checks_the_file(checkpoint: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    out = tmp_path / "exported" / "net.onnx"
    assert main(["export", "--onnx", str(checkpoint), str(out), "--positions", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{out}: ONNX opset 17, ")
    assert "max |diff| policy " in lines[0] and ", value " in lines[0] and " kB" in lines[0]
    assert out.is_file()
    planes = sample_planes(2, seed=9)
    net = trained_looking(CONFIGS["se"])
    want = outputs(net, torch.from_numpy(planes))[1]
    np.testing.assert_allclose(onnxruntime_outputs(out, planes)[1], want, atol=1e-4)


def _bad_inputs(tmp_path: Path, checkpoint: Path) -> dict[str, tuple[list[str], str]]:
    """kind -> (argv after ``export --onnx``, the path the error line must name)."""
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"\x80\x02\x8a\x0a" + os.urandom(500))
    folder = tmp_path / "folder"
    folder.mkdir()
    blocker = tmp_path / "a_file"
    blocker.write_text("a file, not a folder\n")
    missing = tmp_path / "missing" / "net.pt"
    out = str(tmp_path / "out.onnx")
    return {
        "missing checkpoint": ([str(missing), out], str(missing)),
        "checkpoint is a folder": ([str(folder), out], str(folder)),
        "corrupt checkpoint": ([str(corrupt), out], str(corrupt)),
        "unwritable OUT": ([str(checkpoint), str(blocker / "net.onnx")], str(blocker / "net.onnx")),
        "OUT is a folder": ([str(checkpoint), str(folder)], str(folder)),
        "OUT is the checkpoint": ([str(checkpoint), str(checkpoint)], str(checkpoint)),
        "zero positions": ([str(checkpoint), out, "--positions", "0"], "--positions"),
        "unknown opset": ([str(checkpoint), out, "--opset", "99"], "opset 99"),
        "champion without a store": (["champion", out, "--run", str(folder)], str(folder / "mlflow.db")),
    }


@pytest.mark.parametrize("kind", ["missing checkpoint", "checkpoint is a folder", "corrupt checkpoint",
                                  "unwritable OUT", "OUT is a folder", "OUT is the checkpoint",
                                  "zero positions", "unknown opset", "champion without a store"])  # fmt: skip
def test_cli_bad_input_is_one_line_naming_the_path(kind: str, checkpoint: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    argv, needle = _bad_inputs(tmp_path, checkpoint)[kind]
    before = checkpoint.read_bytes()
    assert main(["export", "--onnx", *argv]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("zerochess export: error: ") and needle in lines[0], lines[0]
    assert captured.out == "" and "Traceback" not in captured.err
    assert not (tmp_path / "out.onnx").exists()
    assert checkpoint.read_bytes() == before


def test_cli_needs_the_onnx_flag(checkpoint: Path, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    with pytest.raises(SystemExit) as stop:
        main(["export", str(checkpoint), str(tmp_path / "x.onnx")])
    assert stop.value.code == 2 and "--onnx" in capsys.readouterr().err


def test_the_commands_help_constant_matches_the_exporter() -> None:
    """``zerochess.commands.export`` repeats the default opset so that ``--help`` imports no torch."""
    from pipeline import export
    from zerochess.commands import export as command

    assert command.DEFAULT_OPSET == export.DEFAULT_OPSET
