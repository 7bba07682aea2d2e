"""expected.py: what the 2026-07-28 conformance run must show.

Usage: python3 expected.py OUTPUT_DIR (the suite's -o directory). Every
scenario in SCENARIOS must have run; every check must pass (or be
skipped, or be informational) except those listed in EXPECTED, each of
which must end with the status and the message given, for the reason
given. Exits 1, naming each difference, otherwise 0.
"""

import json
import os
import re
import sys

NO_PROMPTS = "the server has no prompts"
NO_RESOURCES = "the server has no resources"
NO_FIXTURE = "needs the suite's fixture tool, which the server does not have"
NO_MRTR = ("needs a fixture tool returning InputRequiredResult (elicitation,"
           " sampling or roots), which the server does not have")
NO_TASKS = ("the tasks extension (unscored) and its fixture tools are not"
            " implemented")
UNKNOWN = r"unknown tool: "

SCENARIOS = """
caching completion-complete dns-rebinding-protection
http-custom-header-server-validation http-header-validation
input-required-result-basic-elicitation input-required-result-basic-list-roots
input-required-result-basic-sampling input-required-result-capability-check
input-required-result-ignore-extra-params
input-required-result-missing-input-response input-required-result-multi-round
input-required-result-multiple-input-requests
input-required-result-non-tool-request input-required-result-request-state
input-required-result-result-type input-required-result-tampered-state
input-required-result-unsupported-methods input-required-result-validate-input
json-schema-2020-12 prompts-get-embedded-resource prompts-get-simple
prompts-get-with-args prompts-get-with-image prompts-list resources-list
resources-read-binary resources-read-text resources-templates-read
sep-2164-resource-not-found server-sse-multiple-streams server-stateless
tasks-capability-negotiation tasks-dispatch-and-envelope tasks-lifecycle
tasks-mrtr-composition tasks-mrtr-input tasks-request-headers
tasks-request-state-removal tasks-required-task-error tasks-status-notifications
tasks-wire-fields tools-call-audio tools-call-embedded-resource tools-call-error
tools-call-image tools-call-mixed-content tools-call-simple-text
tools-call-with-progress tools-list
""".split()

F, W = "FAILURE", "WARNING"
EXPECTED = {
    ("caching", "sep-2549-prompts-list-caching-hints"):
        (F, r"prompts/list returned JSON-RPC error -32601", NO_PROMPTS),
    ("caching", "sep-2549-resources-list-caching-hints"):
        (F, r"resources/list returned JSON-RPC error -32601", NO_RESOURCES),
    ("caching", "sep-2549-resources-templates-list-caching-hints"):
        (F, r"resources/templates/list returned JSON-RPC error -32601",
         NO_RESOURCES),
    ("completion-complete", "completion-complete"):
        (F, r"method not found: completion/complete",
         "the server offers no completions (no prompts or resources)"),
    ("input-required-result-basic-elicitation",
     "sep-2322-elicitation-incomplete"):
        (F, UNKNOWN + "test_input_required_result_elicitation", NO_MRTR),
    ("input-required-result-basic-list-roots",
     "sep-2322-list-roots-incomplete"):
        (F, UNKNOWN + "test_input_required_result_list_roots", NO_MRTR),
    ("input-required-result-basic-sampling", "sep-2322-sampling-incomplete"):
        (F, UNKNOWN + "test_input_required_result_sampling", NO_MRTR),
    ("input-required-result-capability-check",
     "sep-2322-respect-client-capabilities"):
        (F, UNKNOWN + "test_input_required_result_capabilities", NO_MRTR),
    ("input-required-result-ignore-extra-params",
     "sep-2322-ignore-unexpected-params"):
        (W, UNKNOWN + "test_input_required_result_elicitation", NO_MRTR),
    ("input-required-result-missing-input-response",
     "sep-2322-missing-response-rerequests"):
        (W, r"Server returned JSON-RPC error instead of re-requesting",
         NO_MRTR),
    ("input-required-result-multi-round", "sep-2322-multi-round-r1"):
        (F, r"Expected InputRequiredResult with inputRequests", NO_MRTR),
    ("input-required-result-multiple-input-requests",
     "sep-2322-multiple-inputs-incomplete"):
        (F, UNKNOWN + "test_input_required_result_multiple_inputs", NO_MRTR),
    ("input-required-result-non-tool-request",
     "sep-2322-non-tool-incomplete"):
        (F, r"method not found: prompts/get", NO_PROMPTS),
    ("input-required-result-request-state",
     "sep-2322-request-state-incomplete"):
        (F, UNKNOWN + "test_input_required_result_request_state", NO_MRTR),
    ("input-required-result-result-type", "sep-2322-result-type-included"):
        (F, UNKNOWN + "test_input_required_result_elicitation", NO_MRTR),
    ("input-required-result-tampered-state",
     "sep-2322-reject-tampered-state"):
        (F, r"could not get initial InputRequiredResult", NO_MRTR),
    ("json-schema-2020-12", "json-schema-2020-12-tool-found"):
        (F, r"Tool 'json_schema_2020_12_tool' not found", NO_FIXTURE),
    ("prompts-get-embedded-resource", "prompts-get-embedded-resource"):
        (F, r"method not found: prompts/get", NO_PROMPTS),
    ("prompts-get-simple", "prompts-get-simple"):
        (F, r"method not found: prompts/get", NO_PROMPTS),
    ("prompts-get-with-args", "prompts-get-with-args"):
        (F, r"method not found: prompts/get", NO_PROMPTS),
    ("prompts-get-with-image", "prompts-get-with-image"):
        (F, r"method not found: prompts/get", NO_PROMPTS),
    ("prompts-list", "prompts-list"):
        (F, r"method not found: prompts/list", NO_PROMPTS),
    ("resources-list", "resources-list"):
        (F, r"method not found: resources/list", NO_RESOURCES),
    ("resources-read-binary", "resources-read-binary"):
        (F, r"method not found: resources/read", NO_RESOURCES),
    ("resources-read-text", "resources-read-text"):
        (F, r"method not found: resources/read", NO_RESOURCES),
    ("resources-templates-read", "resources-templates-read"):
        (F, r"method not found: resources/read", NO_RESOURCES),
    ("sep-2164-resource-not-found", "sep-2164-error-code"):
        (W, r"Expected error code -32602 \(Invalid Params\), got -32601",
         NO_RESOURCES + ": resources/read is an unknown method"),
    ("sep-2164-resource-not-found", "sep-2164-data-uri"):
        (W, r"Error data.uri is undefined", NO_RESOURCES),
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"):
        (F, r"does not list the diagnostic tool 'test_missing_capability'",
         NO_FIXTURE + " (no tool needs a client capability)"),
    ("server-stateless", "sep-2575-missing-capability-http-400"):
        (F, r"does not list the diagnostic tool 'test_missing_capability'",
         NO_FIXTURE + " (no tool needs a client capability)"),
    ("server-stateless",
     "sep-2575-http-server-no-independent-requests-on-stream"):
        (F, r"does not list the diagnostic tool 'test_streaming_elicitation'",
         NO_FIXTURE + " (no elicitation)"),
    ("server-stateless", "sep-2575-server-no-log-without-loglevel"):
        (F, r"does not list the diagnostic tool 'test_logging_tool'",
         NO_FIXTURE),
    ("tasks-capability-negotiation", "tasks-extension-advertised"):
        (F, r"capabilities.extensions MUST be advertised", NO_TASKS),
    ("tasks-capability-negotiation", "sep-2663-tasks-methods-non-declaring"):
        (F, r"tasks/get MUST return -32021; got -32601", NO_TASKS),
    ("tasks-capability-negotiation",
     "sep-2663-server-rejects-undeclared-client"):
        (F, UNKNOWN + "slow_compute", NO_TASKS),
    ("tasks-capability-negotiation", "tasks-per-request-meta-opt-in"):
        (F, UNKNOWN + "slow_compute", NO_TASKS),
    ("tasks-dispatch-and-envelope",
     "tasks-server-directed-creation-no-hint"):
        (F, UNKNOWN + "failing_job", NO_TASKS),
    ("tasks-dispatch-and-envelope", "sep-2663-legacy-task-param-ignored"):
        (F, UNKNOWN + "greet", NO_TASKS),
    ("tasks-dispatch-and-envelope", "tasks-immediate-result-shortcut"):
        (F, UNKNOWN + "slow_compute", NO_TASKS),
    ("tasks-dispatch-and-envelope",
     "tasks-result-type-complete-on-non-task-responses"):
        (F, UNKNOWN + "greet", NO_TASKS),
    ("tasks-dispatch-and-envelope",
     "sep-2663-durable-create-strong-consistency"):
        (F, UNKNOWN + "slow_compute", NO_TASKS),
    ("tasks-dispatch-and-envelope",
     "sep-2663-tasks-get-invalid-task-id-32602"):
        (F, r"expected -32602; got -32601", NO_TASKS),
    ("tasks-lifecycle", "tasks-sync-tool-call"):
        (F, UNKNOWN + "greet", NO_TASKS),
    ("tasks-lifecycle", "sep-2663-result-type-task-on-create"):
        (F, UNKNOWN + "slow_compute", NO_TASKS),
    ("tasks-lifecycle", "sep-2663-tasks-get-status-working"):
        (F, r"no task was created by the preceding step", NO_TASKS),
    ("tasks-lifecycle", "sep-2663-tasks-get-status-completed"):
        (F, r"no task was created by the preceding step", NO_TASKS),
    ("tasks-lifecycle", "sep-2663-tool-error-uses-completed-status"):
        (F, UNKNOWN + "failing_job", NO_TASKS),
    ("tasks-lifecycle", "sep-2663-tasks-get-status-failed"):
        (F, UNKNOWN + "protocol_error_job", NO_TASKS),
    ("tasks-lifecycle", "sep-2663-cancel-ack-empty-result"):
        (F, UNKNOWN + "slow_compute", NO_TASKS),
    ("tasks-lifecycle", "tasks-cancel-terminal-idempotent-ack"):
        (F, UNKNOWN + "slow_compute", NO_TASKS),
    ("tasks-mrtr-composition",
     "sep-2663-mrtr-synchronous-before-task-creation"):
        (F, UNKNOWN + "test_tool_with_task", NO_TASKS),
    ("tasks-mrtr-input", "sep-2663-tasks-get-status-input-required"):
        (F, UNKNOWN + "confirm_delete", NO_TASKS),
    ("tasks-mrtr-input", "tasks-mrtr-tasks-update-resumes"):
        (F, UNKNOWN + "confirm_delete", NO_TASKS),
    ("tasks-mrtr-input", "tasks-mrtr-partial-fulfillment"):
        (F, UNKNOWN + "multi_input", NO_TASKS),
    ("tasks-request-headers",
     "tasks-headers-tolerate-mcp-method-on-tools-call"):
        (F, UNKNOWN + "greet", NO_TASKS),
    ("tasks-request-headers",
     "sep-2663-routing-headers-accepted-on-tasks-get"):
        (F, UNKNOWN + "slow_compute", NO_TASKS),
    ("tasks-request-headers",
     "sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get"):
        (F, r"routing-task fixture from Check 2 unavailable", NO_TASKS),
    ("tasks-request-state-removal", "tasks-request-state-removal-setup"):
        (F, UNKNOWN + "slow_compute", NO_TASKS),
    ("tasks-required-task-error",
     "sep-2663-server-returns-missing-capability-when-required"):
        (F, r"tools/call for failing_job returned error code -32602",
         NO_TASKS),
    ("tasks-wire-fields", "tasks-wire-field-renames"):
        (F, UNKNOWN + "slow_compute", NO_TASKS),
    ("tasks-wire-fields", "tasks-no-early-ttl-expiry"):
        (F, r"no task was created by the preceding step", NO_TASKS),
    ("tasks-wire-fields", "tasks-no-related-task-meta-on-inlined-result"):
        (F, UNKNOWN + "slow_compute", NO_TASKS),
    ("tools-call-audio", "tools-call-audio"):
        (F, UNKNOWN + "test_audio_content", NO_FIXTURE),
    ("tools-call-embedded-resource", "tools-call-embedded-resource"):
        (F, UNKNOWN + "test_embedded_resource", NO_FIXTURE),
    ("tools-call-error", "tools-call-error"):
        (F, UNKNOWN + "test_error_handling", NO_FIXTURE),
    ("tools-call-image", "tools-call-image"):
        (F, UNKNOWN + "test_image_content", NO_FIXTURE),
    ("tools-call-mixed-content", "tools-call-mixed-content"):
        (F, UNKNOWN + "test_multiple_content_types", NO_FIXTURE),
    ("tools-call-simple-text", "tools-call-simple-text"):
        (F, UNKNOWN + "test_simple_text", NO_FIXTURE),
    ("tools-call-with-progress", "tools-call-with-progress"):
        (F, UNKNOWN + "test_tool_with_progress", NO_FIXTURE),
}

OK = ("SUCCESS", "INFO", "SKIPPED")


def main(out):
    problems = []
    seen = set()
    got = {}
    passed = 0
    for d in sorted(os.listdir(out)):
        m = re.match(r"server-(.*)-\d{4}-\d\d-\d\dT", d)
        if m is None:
            continue
        scenario = m.group(1)
        seen.add(scenario)
        with open(os.path.join(out, d, "checks.json")) as f:
            for c in json.load(f):
                key = (scenario, c["id"])
                if c["status"] in OK:
                    passed += c["status"] == "SUCCESS"
                    continue
                got.setdefault(key, []).append(
                    (c["status"], c.get("errorMessage") or ""))
    for s in SCENARIOS:
        if s not in seen:
            problems.append(f"scenario {s} did not run")
    for s in seen - set(SCENARIOS):
        problems.append(f"scenario {s} ran but is not listed here")
    for key, results in sorted(got.items()):
        if key not in EXPECTED:
            for st, msg in results:
                problems.append(f"{key[0]} {key[1]}: {st}: {msg}")
            continue
        st_want, pattern, _ = EXPECTED[key]
        for st, msg in results:
            if st != st_want or not re.search(pattern, msg):
                problems.append(f"{key[0]} {key[1]}: {st}: {msg} (expected"
                                f" {st_want} matching {pattern!r})")
    for key in sorted(set(EXPECTED) - set(got)):
        problems.append(f"{key[0]} {key[1]}: passed, but is listed as"
                        f" failing ({EXPECTED[key][2]}): update this list")
    for p in problems:
        print("FAIL", p)
    print(f"{len(seen)} scenarios, {passed} checks passed,"
          f" {len(got)} expected failures, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
