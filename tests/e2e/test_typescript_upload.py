"""The media upload from TypeScript: openapi-typescript 7 (its ordinary settings) types the
``multipart/form-data`` part ``file`` of ``POST /assets`` so that a ``Blob`` or a ``File`` fits
(the document describes it as 3.1's binary data, ``contentMediaType``, not as a string), and a
strict ``tsc`` compiles the upload as client/README.md shows it, with openapi-fetch. No server: the
document is the app's own; node and npm as for tests/e2e/test_typescript_contract.py."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from reelfarm.api.app import create_app
from reelfarm.shared.config import Settings
from tests.e2e.test_typescript_contract import MODULES, PROJECT, installed, run, tsc

UPLOAD_TS = """\
import { openAsBlob } from "node:fs";
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

export async function upload(api: ReturnType<typeof createClient<paths>>, path: string): Promise<string> {
  const file: Blob = await openAsBlob(path);
  const { data, error } = await api.POST("/api/v1/assets", {
    body: { file },
    bodySerializer: (body) => {
      const form = new FormData();
      form.append("file", body.file as Blob, path);
      return form;
    },
  });
  if (error) {
    throw new Error(error.error.code);
  }
  return data.id;
}
"""


def test_a_blob_is_what_the_upload_takes(tmp_path: Path) -> None:
    installed()
    app = create_app(Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path),
                                        "REELFARM_DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite"}))
    document = app.test_client().get("/api/v1/openapi.json").get_json()
    part = document["components"]["schemas"]["AssetUpload"]["properties"]["file"]
    assert part["contentMediaType"] == "application/octet-stream" and "type" not in part
    out = PROJECT / "generated-upload"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    try:
        (out / "openapi.json").write_text(json.dumps(document))
        made = run(MODULES / ".bin" / "openapi-typescript", out / "openapi.json", "-o", out / "schema.d.ts")
        assert made.returncode == 0, made.stdout + made.stderr
        typed = (out / "schema.d.ts").read_text()
        assert "file: unknown;" in typed and "file: string;" not in typed
        (out / "upload.ts").write_text(UPLOAD_TS)
        (out / "tsconfig.json").write_text(json.dumps({"extends": "../tsconfig.json", "include": ["upload.ts"],
                                                       "compilerOptions": {"noEmit": True, "rootDir": "."}}))
        compiled = tsc("-p", str(out / "tsconfig.json"))
        assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    finally:
        shutil.rmtree(out, ignore_errors=True)
