"""Ray's Jobs REST API on the embedded head, for reading a job and stopping it, without importing Ray.

`grpolab status`, `runs`, `stop` and every view that follows a run ask the head about a job many times. Through
Ray's JobSubmissionClient each of those commands first imports Ray (about 2 s of CPU, most of a status call);
the same answers come from the Jobs API's documented HTTP endpoints, which the SDK itself calls:
GET /api/jobs/{id}, GET /api/jobs/{id}/logs, POST /api/jobs/{id}/stop. Submitting stays with the SDK
(grpolab.jobs.cluster.job_client), and so does every remote cluster, whose auth Ray's client resolves.

The reader answers like the SDK: `get_job_info` gives an object with the JobDetails fields grpolab reads (status,
message, start_time and end_time in ms, metadata); an unknown job or a refused request is a RuntimeError.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

TIMEOUT_S = 10.0  # one request to a head on this machine; a head that takes longer is treated as not answering


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

    def _request(self, method: str, path: str) -> Any:
        req = urllib.request.Request(f"{self.address}{path}", method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            detail = exc.read(2000).decode("utf-8", "replace").strip()
            raise RuntimeError(f"Request failed with status code {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise RuntimeError(f"the Jobs API at {self.address} did not answer: {exc}") from None

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
