"""gunicorn's control socket: one per server, in its data folder; two servers on one machine keep
their own, and stopping one leaves the other's."""
from __future__ import annotations

import socket
import stat
from pathlib import Path

from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
        return True


def test_two_servers_on_one_machine_keep_their_own_control_sockets(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    shared_home = {"HOME": str(home), "XDG_RUNTIME_DIR": ""}  # gunicorn's default would be ~/.gunicorn/gunicorn.ctl
    first, second = tmp_path / "a", tmp_path / "b"
    ports = [free_port(), free_port()]
    servers = [start_server(data_dir, port, **shared_home) for data_dir, port in zip((first, second), ports,
                                                                                     strict=True)]
    try:
        for port in ports:
            wait_for_health(f"http://127.0.0.1:{port}")
        for data_dir in (first, second):
            ctl = data_dir / "gunicorn.ctl"
            assert stat.S_ISSOCK(ctl.stat().st_mode) and stat.S_IMODE(ctl.stat().st_mode) == 0o600
            assert _answers(ctl)
        assert not (home / ".gunicorn").exists()

        stop(servers[0][0])
        assert not (first / "gunicorn.ctl").exists()  # the stopped server removed its own
        assert _answers(second / "gunicorn.ctl")  # and left the other's alone
        wait_for_health(f"http://127.0.0.1:{ports[1]}")
    finally:
        for process, _ in servers:
            stop(process)
    assert not (second / "gunicorn.ctl").exists()
