-- ClickHouse projections of the event topics: one table per event type, columns = the Avro fields.
-- ReplacingMergeTree keyed by the event's identity, so re-delivery and replay never add rows (read with FINAL).
-- Everything that depends on grading has evaluator_version in its key. The same DDL runs on chDB and a server.

-- CaseFinished: A simulated case ended: the twin's evidence and, kept apart, the agent's claims.
CREATE TABLE IF NOT EXISTS cases
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `case_id` String,
    `evaluation_id` Nullable(String),
    `side` String,
    `trace_id` String,
    `scenario_name` String,
    `scenario_hash` String,
    `twin_name` String,
    `twin_hash` String,
    `case_seed` Int64,
    `agent` String,
    `agent_version` String,
    `severity` String,
    `tags` Array(String),
    `record_count` Int32,
    `input_message` String,
    `context_json` String,
    `expectations_json` String,
    `secrets` Array(String),
    `initial_state_json` Nullable(String),
    `final_state_json` Nullable(String),
    `state_hash` Nullable(String),
    `output` Nullable(String),
    `claimed_outcome` Nullable(String),
    `business_outcome` Nullable(String),
    `agent_status` Nullable(String),
    `agent_steps` Nullable(Int32),
    `claimed_calls_json` String,
    `tokens` Nullable(Int64),
    `cost_usd` Nullable(Float64),
    `model_kind` String,
    `agent_finding_label` Nullable(String),
    `agent_finding_message` Nullable(String),
    `latency_ms` Nullable(Float64),
    `escalation_tools` Array(String),
    `claim_findings_json` Nullable(String),
    `conversation_json` Nullable(String)
)
ENGINE = ReplacingMergeTree
ORDER BY (case_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- CasePlanned: One side's case of a pinned pair, ready to simulate.
CREATE TABLE IF NOT EXISTS case_plans
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `case_id` String,
    `evaluation_id` String,
    `pair_id` String,
    `side` String,
    `agent` String,
    `scenario_name` String,
    `scenario_hash` String,
    `scenario_json` String,
    `twin_name` String,
    `twin_hash` String,
    `twin_json` String,
    `case_seed` Int64,
    `run_seed` Int64
)
ENGINE = ReplacingMergeTree
ORDER BY (case_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- CaseVerdicted: A case's verdict under one evaluator version, with what the comparator needs.
CREATE TABLE IF NOT EXISTS verdicts
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `evaluation_id` String,
    `case_id` String,
    `side` String,
    `scenario_name` String,
    `evaluator_version` String,
    `status` String,
    `reason` String,
    `passed` Int32,
    `failed` Int32,
    `errored` Int32,
    `skipped` Int32,
    `critical_failures` Int32,
    `score` Nullable(Float64),
    `labels` Array(String),
    `case_seed` Int64,
    `scenario_hash` String,
    `agent` String,
    `agent_version` String,
    `graded_json` String
)
ENGINE = ReplacingMergeTree
ORDER BY (evaluator_version, case_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- ComparisonMade: One scenario of a pinned pair compared: classification, first divergence, metrics.
CREATE TABLE IF NOT EXISTS comparisons
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `evaluation_id` String,
    `scenario_name` String,
    `evaluator_version` String,
    `classification` String,
    `reason` String,
    `baseline_agent` String,
    `candidate_agent` String,
    `baseline_case_id` String,
    `candidate_case_id` String,
    `baseline_status` String,
    `candidate_status` String,
    `severity` String,
    `tags` Array(String),
    `divergence_index` Nullable(Int32),
    `divergence_kind` Nullable(String),
    `divergence_summary` Nullable(String),
    `divergence_impact` Nullable(String),
    `metrics_json` String,
    `document_json` String
)
ENGINE = ReplacingMergeTree
ORDER BY (evaluator_version, evaluation_id, scenario_name)
SETTINGS non_replicated_deduplication_window = 1000;

-- ContradictionDetected: A claimed success that verification disproved, or a one-sided entry past the horizon.
CREATE TABLE IF NOT EXISTS contradictions
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `alert_id` String,
    `kind` String,
    `trace_id` String,
    `case_id` Nullable(String),
    `evaluation_id` Nullable(String),
    `scenario_name` Nullable(String),
    `agent` Nullable(String),
    `agent_version` Nullable(String),
    `tool` Nullable(String),
    `claimed_status` Nullable(String),
    `verified_status` Nullable(String),
    `verified` Bool,
    `source` Nullable(String),
    `evaluator_version` String,
    `rule` String,
    `detected_at` DateTime64(3, 'UTC'),
    `detail` String,
    `subject` Nullable(String),
    `claim_inferred_by` Nullable(String),
    `claim_rule` Nullable(String),
    `claim_confidence` Nullable(Float64)
)
ENGINE = ReplacingMergeTree
ORDER BY (evaluator_version, kind, alert_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- DeadLettered: A message a stage could not decode or process, kept with its original bytes.
CREATE TABLE IF NOT EXISTS dead_letters
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `stage` String,
    `reason` String,
    `error_class` String,
    `source_topic` String,
    `source_partition` Int32,
    `source_offset` Int64,
    `original_key` Nullable(String),
    `original_value` String,
    `evaluator_version` Nullable(String),
    `attempt` Int32
)
ENGINE = ReplacingMergeTree
ORDER BY (stage, source_topic, source_partition, source_offset)
SETTINGS non_replicated_deduplication_window = 1000;

-- EvaluationRequested: An evaluation of a candidate against a baseline was requested.
CREATE TABLE IF NOT EXISTS evaluation_requests
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `evaluation_id` String,
    `baseline_agent` String,
    `candidate_agent` String,
    `seed` Nullable(Int64),
    `evaluator_version` String,
    `twin_json` String,
    `scenarios_json` String,
    `trials` Int32 DEFAULT 1
)
ENGINE = ReplacingMergeTree
ORDER BY (evaluation_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- ExpectationResulted: One expectation graded on one case by one evaluator version.
CREATE TABLE IF NOT EXISTS expectation_results
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `case_id` String,
    `evaluation_id` Nullable(String),
    `side` String,
    `scenario_name` String,
    `evaluator_version` String,
    `expectation_id` String,
    `expectation_type` String,
    `critical` Bool,
    `status` String,
    `reason` String,
    `evaluator` String,
    `evaluator_impl_version` String,
    `score` Nullable(Float64),
    `label` Nullable(String),
    `evidence_json` String,
    `details_json` String
)
ENGINE = ReplacingMergeTree
ORDER BY (evaluator_version, case_id, expectation_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- HumanReviewed: A person's override of one expectation result on one side (append-only).
CREATE TABLE IF NOT EXISTS reviews
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `review_id` String,
    `evaluation_id` String,
    `scenario_name` String,
    `side` String,
    `expectation_id` String,
    `status` String,
    `note` String,
    `reviewer` String,
    `created_at` DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY (evaluation_id, review_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- OutcomeVerified: What verification found about a trace's outcome, apart from what was claimed.
CREATE TABLE IF NOT EXISTS verified_outcomes
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `trace_id` String,
    `case_id` Nullable(String),
    `evaluation_id` Nullable(String),
    `evaluator_version` String,
    `status` String,
    `verified` Bool,
    `source` String,
    `claimed_status` Nullable(String),
    `business_outcome` Nullable(String),
    `reason` String,
    `agent` Nullable(String),
    `agent_version` Nullable(String),
    `received_at` Nullable(DateTime64(3, 'UTC')),
    `clock_skew` Nullable(String),
    `subject` Nullable(String)
)
ENGINE = ReplacingMergeTree
ORDER BY (evaluator_version, ifNull(tenant, ''), trace_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- PairPlanned: The pinned pair: one planning step resolved the selection once for both sides.
CREATE TABLE IF NOT EXISTS pairs
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `evaluation_id` String,
    `pair_id` String,
    `run_seed` Int64,
    `baseline_agent` String,
    `candidate_agent` String,
    `twin_name` String,
    `twin_hash` String,
    `scenario_names` Array(String),
    `scenario_hashes` Array(String),
    `case_count` Int32,
    `evaluator_version` String,
    `trials` Int32 DEFAULT 1
)
ENGINE = ReplacingMergeTree
ORDER BY (evaluation_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- SpanRecorded: An OpenTelemetry span (GenAI semantic conventions, agenttwin.* outcome attributes).
CREATE TABLE IF NOT EXISTS spans
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `trace_id` String,
    `span_id` String,
    `parent_span_id` Nullable(String),
    `name` String,
    `kind` String,
    `start_unix_nano` Int64,
    `end_unix_nano` Int64,
    `status_code` String,
    `status_message` Nullable(String),
    `service_name` String,
    `source` String,
    `attributes` Map(String, String),
    `resource_attributes` Map(String, String),
    `received_at` Nullable(DateTime64(3, 'UTC')),
    `clock_skew` Nullable(String),
    `span_role` Nullable(String),
    `tool_name` Nullable(String),
    `tool_error` Nullable(String),
    `agent_name` Nullable(String),
    `agent_version` Nullable(String)
)
ENGINE = ReplacingMergeTree
ORDER BY (ifNull(tenant, ''), trace_id, span_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- TwinCallRecorded: One call (or knowledge-base retrieval) as the twin recorded it: the evidence.
CREATE TABLE IF NOT EXISTS twin_calls
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `case_id` String,
    `evaluation_id` Nullable(String),
    `seq` Int32,
    `kind` String,
    `call_number` Int32,
    `tool` String,
    `arguments_json` String,
    `http_status` Int32,
    `status` String,
    `error_code` Nullable(String),
    `response_json` Nullable(String),
    `risk` Nullable(String),
    `fault` Nullable(String),
    `mutated` Bool,
    `expects_mutation` Bool,
    `replayed` Bool,
    `effect_key` Nullable(String),
    `cross_tenant` Nullable(String),
    `policy_violation` Nullable(String),
    `redelivered` Bool,
    `changes_json` String,
    `delay_ms` Int32,
    `idempotency_key` Nullable(String),
    `retry` Bool,
    `query` Nullable(String),
    `retrieval_limit` Nullable(Int32),
    `documents_json` Nullable(String)
)
ENGINE = ReplacingMergeTree
ORDER BY (case_id, seq)
SETTINGS non_replicated_deduplication_window = 1000;

-- GateDecided: A release gate's decision on one evaluation: PASS, WARN or BLOCK, its reasons and the policy.
-- Every decision is kept (another policy, or a re-decision after a review, is a new row).
CREATE TABLE IF NOT EXISTS gate_decisions
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `evaluation_id` String,
    `evaluator_version` String,
    `baseline_agent` String,
    `candidate_agent` String,
    `decision` String,
    `summary` String,
    `blocking` Int32,
    `warnings` Int32,
    `cases` Int32,
    `reasons_json` String,
    `policy_name` String,
    `policy_hash` String,
    `policy_json` String,
    `inputs_hash` String
)
ENGINE = ReplacingMergeTree
ORDER BY (evaluator_version, evaluation_id, event_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- SubjectLinked: A trace acted on a business subject (a write tool's order_id, an agenttwin.subject attribute).
CREATE TABLE IF NOT EXISTS subject_links
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `subject` String,
    `trace_id` String,
    `tool` Nullable(String),
    `received_at` Nullable(DateTime64(3, 'UTC'))
)
ENGINE = ReplacingMergeTree
ORDER BY (ifNull(tenant, ''), subject, trace_id, event_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- SubjectVerified: What a system of record verified about a business subject, not knowing the trace.
CREATE TABLE IF NOT EXISTS subject_verifications
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `subject` String,
    `evaluator_version` String,
    `status` String,
    `verified` Bool,
    `source` String,
    `reason` String,
    `business_outcome` Nullable(String),
    `received_at` Nullable(DateTime64(3, 'UTC')),
    `clock_skew` Nullable(String)
)
ENGINE = ReplacingMergeTree
ORDER BY (ifNull(tenant, ''), subject, event_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- ClaimRead: The outcome join's reading of a production trace; the highest revision of a trace wins.
CREATE TABLE IF NOT EXISTS claims
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `trace_id` String,
    `revision` Int64,
    `agent` Nullable(String),
    `agent_version` Nullable(String),
    `tools` Array(String),
    `failed_tools` Array(String),
    `write_tool` Nullable(String),
    `subjects` Array(String),
    `final_answer` Nullable(String),
    `claimed_status` Nullable(String),
    `claim_inferred_by` Nullable(String),
    `claim_rule` Nullable(String),
    `received_at` Nullable(DateTime64(3, 'UTC')),
    `claim_confidence` Nullable(Float64)
)
ENGINE = ReplacingMergeTree(revision)
ORDER BY (ifNull(tenant, ''), trace_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- TraceTallied: What one production trace counts for in its agent version's rates: claimed and verified status, contradicted, verified failure, tool errors, escalated, and its one-minute window.
CREATE TABLE IF NOT EXISTS version_traces
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `watch_key` String,
    `trace_id` String,
    `revision` Int32,
    `agent` String,
    `agent_version` String,
    `window_start` DateTime64(3, 'UTC'),
    `claimed_status` String,
    `contradicted` Bool,
    `verified_failure` Bool,
    `tool_errors` Int32,
    `escalated` Bool,
    `verified_status` Nullable(String),
    `alert_id` Nullable(String)
)
ENGINE = ReplacingMergeTree(revision)
ORDER BY (ifNull(tenant, ''), trace_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- VersionWindowed: One agent version's counts in one one-minute window of production traffic (traces, claimed and verified outcomes by status, contradictions, verified failures, tool errors, escalations).
CREATE TABLE IF NOT EXISTS version_windows
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `watch_key` String,
    `agent` String,
    `agent_version` String,
    `window_start` DateTime64(3, 'UTC'),
    `revision` Int32,
    `traces` Int32,
    `claimed_success` Int32,
    `claimed_failure` Int32,
    `claimed_partial` Int32,
    `claimed_escalated` Int32,
    `claimed_refused` Int32,
    `claimed_unknown` Int32,
    `verified_traces` Int32,
    `verified_success` Int32,
    `verified_partial` Int32,
    `verified_failure` Int32,
    `verified_unknown` Int32,
    `contradictions` Int32,
    `verified_failures` Int32,
    `tool_errors` Int32,
    `escalations` Int32
)
ENGINE = ReplacingMergeTree(revision)
ORDER BY (ifNull(tenant, ''), agent, agent_version, window_start)
SETTINGS non_replicated_deduplication_window = 1000;

-- VersionRegressed: A newer agent version's contradiction, verified-failure or escalation rate is higher than an older version's: the sequential test's e-value crossed the policy's threshold.
CREATE TABLE IF NOT EXISTS version_regressions
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `watch_key` String,
    `alarm_id` String,
    `agent` String,
    `baseline_version` String,
    `candidate_version` String,
    `metric` String,
    `baseline_traces` Int32,
    `baseline_events` Int32,
    `baseline_rate` Float64,
    `candidate_traces` Int32,
    `candidate_events` Int32,
    `candidate_rate` Float64,
    `e_value` Float64,
    `log_e_value` Float64,
    `threshold` Float64,
    `alpha` Float64,
    `policy` String,
    `detected_at` DateTime64(3, 'UTC'),
    `detail` String,
    `contradicted_traces` Array(String)
)
ENGINE = ReplacingMergeTree
ORDER BY (ifNull(tenant, ''), alarm_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- VersionCleared: A newer agent version cleared against an older one (no alarm after the policy's number of verified traces), or an open version alarm closed because a newer version cleared against its baseline.
CREATE TABLE IF NOT EXISTS version_clearances
(
    `event_id` String,
    `event_type` String,
    `occurred_at` DateTime64(3, 'UTC'),
    `tenant` Nullable(String),
    `correlation_id` String,
    `watch_key` String,
    `agent` String,
    `baseline_version` String,
    `candidate_version` String,
    `reason` String,
    `baseline_traces` Int32,
    `candidate_traces` Int32,
    `policy` String,
    `cleared_at` DateTime64(3, 'UTC'),
    `detail` String,
    `alarm_id` Nullable(String),
    `metric` Nullable(String),
    `replaced_by` Nullable(String)
)
ENGINE = ReplacingMergeTree
ORDER BY (event_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- Upgrades of projections an earlier version created (CREATE ... IF NOT EXISTS leaves an old table as it was).
ALTER TABLE evaluation_requests ADD COLUMN IF NOT EXISTS `trials` Int32 DEFAULT 1;
ALTER TABLE pairs ADD COLUMN IF NOT EXISTS `trials` Int32 DEFAULT 1;
ALTER TABLE cases ADD COLUMN IF NOT EXISTS `escalation_tools` Array(String);
ALTER TABLE cases ADD COLUMN IF NOT EXISTS `claim_findings_json` Nullable(String);
ALTER TABLE cases ADD COLUMN IF NOT EXISTS `conversation_json` Nullable(String);
ALTER TABLE spans ADD COLUMN IF NOT EXISTS `span_role` Nullable(String);
ALTER TABLE spans ADD COLUMN IF NOT EXISTS `tool_name` Nullable(String);
ALTER TABLE spans ADD COLUMN IF NOT EXISTS `tool_error` Nullable(String);
ALTER TABLE spans ADD COLUMN IF NOT EXISTS `agent_name` Nullable(String);
ALTER TABLE spans ADD COLUMN IF NOT EXISTS `agent_version` Nullable(String);
ALTER TABLE verified_outcomes ADD COLUMN IF NOT EXISTS `subject` Nullable(String);
ALTER TABLE contradictions ADD COLUMN IF NOT EXISTS `subject` Nullable(String);
ALTER TABLE contradictions ADD COLUMN IF NOT EXISTS `claim_inferred_by` Nullable(String);
ALTER TABLE contradictions ADD COLUMN IF NOT EXISTS `claim_rule` Nullable(String);
ALTER TABLE contradictions ADD COLUMN IF NOT EXISTS `claim_confidence` Nullable(Float64);
ALTER TABLE claims ADD COLUMN IF NOT EXISTS `claim_confidence` Nullable(Float64);
