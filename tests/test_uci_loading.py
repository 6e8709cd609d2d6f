"""Choosing the network: checkpoint, MLflow champion (with a fake MLflow), random, uniform."""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch

from models.evaluation import UniformEvaluator
from models.net import AlphaZeroNet, NetConfig
from models.net_evaluator import NetEvaluator
from pipeline.checkpoint import save_net
from pipeline.config import Config, load_config
from pipeline.uci.loading import NetworkSelectionError, find_checkpoint_file, load_player
from tests.helpers.cli import run_zerochess


@pytest.fixture
def config() -> Config:
    return load_config(None, ["net.blocks=1", "net.filters=8", "selfplay.device=cpu"])


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    return save_net(AlphaZeroNet(NetConfig(blocks=1, filters=8)), tmp_path / "net.pt")


@pytest.fixture
def store(tmp_path: Path) -> str:
    """The URI of an (empty) SQLite tracking store file."""
    (tmp_path / "registry.db").touch()
    return f"sqlite:///{tmp_path / 'registry.db'}"


class FakeMlflowError(Exception):
    """Stands for ``mlflow.exceptions.MlflowException``."""


def install_fake_mlflow(
    monkeypatch: pytest.MonkeyPatch,
    store: str,
    versions: dict[str, str],
    artifacts: dict[str, list[Path]],
) -> list[Any]:
    """Put a minimal ``mlflow`` in ``sys.modules``; return the calls it saw.

    ``store``: the default tracking URI; ``versions``: registered model name
    -> version carrying the champion alias; ``artifacts``: ``name/version``
    -> the files its download produces.
    """
    calls: list[Any] = []

    class Client:
        def __init__(
            self, tracking_uri: str | None = None, registry_uri: str | None = None
        ) -> None:
            calls.append(("client", tracking_uri, registry_uri))

        def get_model_version_by_alias(self, name: str, alias: str) -> Any:
            calls.append(("alias", name, alias))
            if name not in versions:
                raise FakeMlflowError(f"Registered model alias {alias} not found.")
            return types.SimpleNamespace(version=versions[name])

        def get_model_version_download_uri(self, name: str, version: str) -> str:
            return f"file:///artifacts/{name}/{version}"

    def download_artifacts(artifact_uri: str, dst_path: str, tracking_uri: str | None) -> str:
        calls.append(("download", artifact_uri, tracking_uri))
        target = Path(dst_path) / "artifacts"
        target.mkdir(parents=True)
        for file in artifacts[artifact_uri.removeprefix("file:///artifacts/")]:
            shutil.copy(file, target / file.name)
        return str(target)

    mlflow = types.ModuleType("mlflow")
    mlflow.MlflowClient = Client  # type: ignore[attr-defined]
    mlflow.get_tracking_uri = lambda: store  # type: ignore[attr-defined]
    mlflow.artifacts = types.ModuleType("mlflow.artifacts")  # type: ignore[attr-defined]
    mlflow.artifacts.download_artifacts = download_artifacts  # type: ignore[attr-defined]
    mlflow.exceptions = types.ModuleType("mlflow.exceptions")  # type: ignore[attr-defined]
    mlflow.exceptions.MlflowException = FakeMlflowError  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mlflow", mlflow)
    monkeypatch.setitem(sys.modules, "mlflow.artifacts", mlflow.artifacts)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mlflow.exceptions", mlflow.exceptions)  # type: ignore[attr-defined]
    return calls


def test_champion_is_downloaded_and_loaded(
    monkeypatch: pytest.MonkeyPatch, config: Config, checkpoint: Path, store: str
) -> None:
    calls = install_fake_mlflow(monkeypatch, store, {"zc": "3"}, {"zc/3": [checkpoint]})
    loaded = load_player(config, checkpoint="champion", model_name="zc", tracking_uri=store)
    assert isinstance(loaded.evaluator, NetEvaluator)
    assert loaded.description.startswith("zc v3 (champion) (1x8, cpu, ")
    assert ("alias", "zc", "champion") in calls
    assert ("download", "file:///artifacts/zc/3", store) in calls


def test_missing_alias_names_the_model_and_the_store(
    monkeypatch: pytest.MonkeyPatch, config: Config, store: str
) -> None:
    install_fake_mlflow(monkeypatch, store, {}, {})
    with pytest.raises(NetworkSelectionError) as caught:
        load_player(config, checkpoint="champion")
    assert f"alias 'champion' for registered model 'zerochess' in tracking store {store}" in str(
        caught.value
    )


def test_a_missing_sqlite_store_is_not_created(
    monkeypatch: pytest.MonkeyPatch, config: Config, tmp_path: Path
) -> None:
    absent = f"sqlite:///{tmp_path / 'absent.db'}"
    install_fake_mlflow(monkeypatch, absent, {"zerochess": "1"}, {})
    with pytest.raises(
        NetworkSelectionError, match="does not exist: pass the training run's store"
    ):
        load_player(config, checkpoint="champion")
    assert not (tmp_path / "absent.db").exists()


def test_artifacts_without_a_checkpoint_are_refused(
    monkeypatch: pytest.MonkeyPatch, config: Config, tmp_path: Path, store: str
) -> None:
    readme = tmp_path / "README.txt"
    readme.write_text("no weights here")
    install_fake_mlflow(monkeypatch, store, {"zerochess": "1"}, {"zerochess/1": [readme]})
    with pytest.raises(
        NetworkSelectionError, match=r"zerochess v1 .* holds no checkpoint file .*README.txt"
    ):
        load_player(config, checkpoint="champion")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # SQLAlchemy, inside MLflow
def test_champion_through_a_real_mlflow_registry(
    config: Config, checkpoint: Path, tmp_path: Path
) -> None:
    mlflow = pytest.importorskip("mlflow")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment(
        "uci-test", artifact_location=(tmp_path / "artifacts").as_uri()
    )
    run = client.create_run(experiment)
    client.log_artifact(run.info.run_id, str(checkpoint), "net")
    client.set_terminated(run.info.run_id)
    client.create_registered_model("zc")
    version = client.create_model_version(
        "zc", f"runs:/{run.info.run_id}/net", run_id=run.info.run_id
    )
    client.set_registered_model_alias("zc", "champion", version.version)
    loaded = load_player(config, checkpoint="champion", model_name="zc", tracking_uri=uri)
    assert loaded.description.startswith(f"zc v{version.version} (champion) (1x8, cpu, ")
    with pytest.raises(
        NetworkSelectionError, match="alias 'champion' for registered model 'nobody'"
    ):
        load_player(config, checkpoint="champion", model_name="nobody", tracking_uri=uri)


def test_champion_without_mlflow_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, config: Config
) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError
    with pytest.raises(NetworkSelectionError, match=r"needs MLflow .*pip install mlflow"):
        load_player(config, checkpoint="champion")


def test_a_checkpoint_path_a_random_net_and_no_net(config: Config, checkpoint: Path) -> None:
    assert load_player(config, checkpoint=str(checkpoint)).description.startswith(f"{checkpoint} (1x8, cpu, ")
    assert load_player(config, checkpoint=None, seed=1).description.startswith("random weights (1x8, cpu, ")
    fp32 = load_player(config, checkpoint=None, seed=1, precision="fp32").description
    assert fp32.endswith(", fp32, compile jit)") or fp32.endswith(", fp32, compile eager)")
    assert isinstance(
        load_player(config, checkpoint=None, uniform=True).evaluator, UniformEvaluator
    )
    with pytest.raises(NetworkSelectionError, match="drop --checkpoint"):
        load_player(config, checkpoint=str(checkpoint), uniform=True)


def test_find_checkpoint_file_wants_one_or_net_pt(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "weights.pt").write_bytes(b"x")
    (tmp_path / "last.ckpt").write_bytes(b"x")
    assert find_checkpoint_file(tmp_path, "here") == tmp_path / "a" / "weights.pt"
    (tmp_path / "net.pt").write_bytes(b"x")
    assert find_checkpoint_file(tmp_path, "here") == tmp_path / "net.pt"
    (tmp_path / "a" / "net.pt").write_bytes(b"x")
    with pytest.raises(NetworkSelectionError, match="several checkpoint files and not one net.pt"):
        find_checkpoint_file(tmp_path, "here")


def test_the_champion_is_read_from_the_run_folder_unless_a_store_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``uci --checkpoint champion`` reads the store ``zerochess run`` wrote
    (its ``--out``'s mlflow.db), not MLflow's default in the working folder."""
    from pipeline.champion import champion_store

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert champion_store(None, str(tmp_path / "run")) == f"sqlite:///{tmp_path / 'run' / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///elsewhere.db")
    assert champion_store(None, str(tmp_path / "run")) == "sqlite:///elsewhere.db"
    assert champion_store("sqlite:///named.db", str(tmp_path / "run")) == "sqlite:///named.db"


def test_uci_champion_of_a_run_without_a_store_names_the_store(tmp_path: Path) -> None:
    result = run_zerochess("uci", "--checkpoint", "champion", "--run", str(tmp_path / "nope"), stdin="uci\nquit\n",
                           timeout=120)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert str(tmp_path / "nope" / "mlflow.db") in result.stderr
    assert "Traceback" not in result.stderr
