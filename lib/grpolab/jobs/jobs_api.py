"""Ray's Jobs REST API on the embedded head, for submitting, reading and stopping a job without importing Ray.

`grpolab status`, `runs`, `stop` and every view that follows a run ask the head about a job many times, and
`grpolab run` submits one. Through Ray's JobSubmissionClient each of those commands first imports Ray (about 2 s of
CPU, most of a status call); the same answers come from the Jobs API's documented HTTP endpoints, which the SDK
itself calls: POST /api/jobs/, GET /api/jobs/{id}, GET /api/jobs/{id}/logs, POST /api/jobs/{id}/stop. A job whose
runtime_env the SDK must prepare first (a local working_dir or py_modules to upload, pip or conda files to read:
anything beyond env_vars) is submitted by the SDK (grpolab.jobs.cluster.job_client), and so is every job of a remote
cluster, whose auth Ray's client resolves.

The reader answers like the SDK: `get_job_info` gives an object with the JobDetails fields grpolab reads (status,
message, start_time and end_time in ms, metadata); an unknown job or a refused request is a RuntimeError.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

# runtime_env keys the REST API takes as they are; any other (working_dir, py_modules, pip, conda, ...) the SDK
# prepares before it submits (uploads a local folder, reads a requirements file)
SUBMITS_AS_IS = frozenset({"env_vars"})
TIMEOUT_S = 10.0  # one request to a head on this machine; a head that takes longer is treated as not answering


def needs_sdk(runtime_env: dict) -> list[str]:
    """The runtime_env keys Ray's SDK must prepare (working_dir, py_modules, pip, ...); none: the REST API submits
    the job with it as it is."""
    return sorted(set(runtime_env) - SUBMITS_AS_IS)


@dataclass(frozen=True)
class JobInfo:
    """The fields of Ray's JobDetails that grpolab reads."""

    status: str
    message: str = ""
    start_time: int | None = None
    end_time: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JobsApi:
    """A Jobs API client for one dashboard address with the headers that authenticate to it."""

    address: str
    headers: dict[str, str]

    def _request(self, method: str, path: str, body: dict | None = None) -> Any:
        headers, data = dict(self.headers), None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        req = urllib.request.Request(f"{self.address}{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            detail = exc.read(2000).decode("utf-8", "replace").strip()
            raise RuntimeError(f"Request failed with status code {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise RuntimeError(f"the Jobs API at {self.address} did not answer: {exc}") from None

    def submit_job(
        self, *, entrypoint: str, submission_id: str, runtime_env: dict | None = None, metadata: dict | None = None
    ) -> str:
        """The submission id of the job Ray accepted; a RuntimeError with Ray's answer when it refused it (a taken
        id, or "No available agent ... try again later" from a head that has just started)."""
        extra = needs_sdk(runtime_env or {})
        if extra:
            raise ValueError(f"runtime_env {extra} needs Ray's SDK to prepare it: submit with job_client")
        body = {
            "entrypoint": entrypoint,
            "submission_id": submission_id,
            "runtime_env": runtime_env or {},
            "metadata": metadata or {},
        }
        data = self._request("POST", "/api/jobs/", body)
        return str(data.get("submission_id") or submission_id) if isinstance(data, dict) else submission_id

    def get_job_info(self, job_id: str) -> JobInfo:
        data = self._request("GET", f"/api/jobs/{job_id}")
        if not isinstance(data, dict) or "status" not in data:
            raise RuntimeError(f"the Jobs API at {self.address} answered no job for {job_id}")
        metadata = data.get("metadata")
        return JobInfo(
            status=str(data["status"]),
            message=data.get("message") or "",
            start_time=data.get("start_time"),
            end_time=data.get("end_time"),
            metadata=metadata if isinstance(metadata, dict) else {},
        )

    def get_job_status(self, job_id: str) -> str:
        return self.get_job_info(job_id).status

    def get_job_logs(self, job_id: str) -> str:
        data = self._request("GET", f"/api/jobs/{job_id}/logs")
        return str(data.get("logs") or "") if isinstance(data, dict) else ""

    def stop_job(self, job_id: str) -> bool:
        data = self._request("POST", f"/api/jobs/{job_id}/stop")
        return bool(data.get("stopped")) if isinstance(data, dict) else False
