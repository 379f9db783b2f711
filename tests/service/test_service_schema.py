"""The API against its own contract (issue 35 Build, issue 34 item 5): the OpenAPI document of the
running server describes every /api/ answer's body, and schemathesis fuzzes each operation from
that document, signed in with a student's token, finding no server error and no answer that breaks
the schema (status codes, content types, bodies, headers). The reference pages (serve --api-docs)
carry a CSP and refuse to be framed; without the flag they are not served (the shared server)."""
from __future__ import annotations

import httpx
import pytest
import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance
from hypothesis import HealthCheck, given, settings

from service_helpers import make_service

STUDENT = "f001"


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    """A server of this module's own (its student's uploads
    are all refused; their count stays here)."""
    server = make_service(tmp_path_factory.mktemp("schema"), "--workers", "1", "--rate", "5/hour",
                          "--api-docs", students=[STUDENT, "f002"])
    server.start()
    yield server
    server.stop()


def test_every_api_answer_has_a_schema_in_the_openapi_document(fuzzed):
    document = httpx.get(f"{fuzzed.url}/openapi.json", timeout=30).json()
    operations = [(path, method, operation) for path, methods in document["paths"].items()
                  for method, operation in methods.items() if path.startswith("/api/")]
    assert len(operations) == 3, operations
    for path, method, operation in operations:
        assert {"200", "202"} & set(operation["responses"]) and "401" in operation["responses"], (
            path, method,
        )
        for status, response in operation["responses"].items():
            assert response["content"]["application/json"]["schema"], (path, method, status)
        assert operation["security"] == [{"HTTPBearer": []}], (path, method)
    assert document["paths"]["/health"]["get"]["responses"]["200"]["content"]["application/json"][
        "schema"
    ]


def test_the_api_holds_its_own_schema_under_fuzzing(fuzzed):
    """Each operation with generated paths, headers and bodies, signed in as a student:
    schemathesis's checks (no 5xx; status code, content type, headers and body as documented;
    auth not ignored). (Its pytest plugin, from_fixture, does not run on this pytest: the
    operations are run here.)"""
    api = schemathesis.openapi.from_url(f"{fuzzed.url}/openapi.json")
    signed = {"Authorization": f"Bearer {fuzzed.tokens[STUDENT]}"}
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) == 4

    for operation in operations:
        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def holds(case):
            # All of schemathesis's checks but one: that any schema-valid body is accepted. A file
            # is schema-valid as any bytes, and only a notebook of a lab is taken: a 422 that says
            # why (status: the command line's word) is the documented answer, not a failure.
            case.call_and_validate(headers=signed, timeout=60,
                                   excluded_checks=[positive_data_acceptance])

        holds()


def test_the_reference_pages_when_served_carry_a_csp_and_refuse_frames(fuzzed, service):
    docs = httpx.get(f"{fuzzed.url}/docs", timeout=30)
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    policy = docs.headers["content-security-policy"]
    assert (
        "frame-ancestors 'none'" in policy
        and "script-src" in policy
        and "*" not in policy.split("script-src")[1].split(";")[0]
    )
    assert docs.headers["x-frame-options"] == "SAMEORIGIN"
    for page in ("/docs", "/redoc"):  # off unless serve --api-docs (the shared server has no flag)
        assert httpx.get(f"{service.url}{page}", timeout=30).status_code == 404
    # the contract itself stays
    assert httpx.get(f"{service.url}/openapi.json", timeout=30).status_code == 200
