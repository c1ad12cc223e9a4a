"""A ``--download`` path whose folder is missing is refused before the API is asked for anything
(no render paid for only to find nowhere to save it, no traceback), against the loopback stand-in
for the API of ``test_client_priority``."""
from __future__ import annotations

from pathlib import Path

from tests.unit.client.test_client_priority import DONE, FakeAPI, cli


def test_a_download_into_a_missing_folder_is_refused_before_the_render_is_asked_for(tmp_path: Path) -> None:
    api = FakeAPI([DONE])
    missing = tmp_path / "missing" / "dir" / "x.mp4"
    try:
        for args in (("videos", "render", "v1", "--download", str(missing)),
                     ("renders", "wait", "r1", "--download", str(missing)),
                     ("videos", "render", "v1", "--download", str(missing), "--json")):
            refused = cli(api, *args)
            assert refused.exit_code == 2, refused.output
            assert isinstance(refused.exception, SystemExit) and "Traceback" not in refused.output
            assert f"Invalid value for '--download': {missing}: the folder {missing.parent} does not exist" \
                in " ".join(refused.output.split()), refused.output
        assert api.seen == []  # nothing was asked of the API
        (tmp_path / "missing" / "dir").mkdir(parents=True)
        accepted = cli(api, "videos", "render", "v1", "--format", "1:1", "--no-wait", "--download",
                       str(missing))
        # The check passed: the render was asked for, followed, and its (unreachable) file fetched.
        assert accepted.exit_code == 3 and "download: cannot reach http://files.invalid/r1.mp4" in accepted.output
        assert [m for m, _, _ in api.seen][:1] == ["POST"]
    finally:
        api.close()
