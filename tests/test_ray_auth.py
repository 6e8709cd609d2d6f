"""No open door: the local Ray instance zerochess starts admits only clients
holding its token (Ray's GCS, raylet and workers listen on every interface)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ray = pytest.importorskip("ray")

# A client that asks the GCS for its key-value store: the first thing any
# driver, worker or `ray` CLI does when it joins a cluster.
PROBE = """
import sys
from ray._raylet import GcsClient
try:
    keys = GcsClient(address=sys.argv[1]).internal_kv_keys(b"", None, timeout=10)
except Exception as error:
    print("REFUSED", type(error).__name__, error)
else:
    print("ADMITTED", len(keys))
"""


def probe(address: str, **env_changes: str | None) -> str:
    env = dict(os.environ)
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    result = subprocess.run([sys.executable, "-c", PROBE, address], env=env, capture_output=True, text=True,
                            timeout=60)  # fmt: skip
    return result.stdout.strip()


def test_init_ray_turns_token_auth_on_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from ray._raylet import AuthenticationMode, get_authentication_mode

    from actors.runtime import use_auth_mode

    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    assert use_auth_mode() == "token"
    assert get_authentication_mode() == AuthenticationMode.TOKEN  # this driver obeys it, not only its children


def test_the_token_file_is_made_private(tmp_path) -> None:  # noqa: ANN001
    from actors.runtime import protect_token

    token = tmp_path / "auth_token"
    token.write_text("secret")
    token.chmod(0o644)
    protect_token(token)
    assert token.stat().st_mode & 0o777 == 0o600


def test_a_client_without_the_token_is_refused(local_ray: None) -> None:  # noqa: ARG001
    address = ray.get_runtime_context().gcs_address
    assert probe(address).startswith("ADMITTED")  # the token of ~/.ray/auth_token
    wrong = probe(address, RAY_AUTH_TOKEN="0" * 32)
    assert wrong.startswith("REFUSED") and "token" in wrong.lower(), wrong
    none = probe(address, RAY_AUTH_MODE="disabled", RAY_AUTH_TOKEN=None)
    assert none.startswith("REFUSED"), none
