"""Write shared/vectors/sealing-vectors.json: HPKE test vectors for both clients.

    python -m tests.shared.generate_sealing_vectors          # rewrite the file
    python -m tests.shared.generate_sealing_vectors --check  # exit 1 if it is stale

Two parts (docs/protocol.md, "Sealing"):

* ``rfc9180``: RFC 9180 Appendix A.1.1, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256,
  AES-128-GCM, base mode, copied from the RFC (kept as it is on regeneration).
* ``relay_noise``: a survey whose relay adds dummy reports (docs/protocol.md §11.7): its
  definition and canonical bytes, each question's output values, sealed dummies that
  must open to the given bodies, a batch body with ``real_units``, and ``noise`` members
  to refuse (at parse, or when the law's exact delta is checked).
* ``deniable``: this protocol's own vectors: a fixed recipient key, a survey with
  every mechanism, each unit's padded size, ``info`` bytes, padded plaintexts,
  sealed blobs that must open to the given body, blobs whose body has its members in
  another order (they must open, and a recipient reads the same reports: it does not
  check the order, docs/protocol.md §10.3), and blobs that must be refused.
  HPKE draws a fresh ephemeral key per seal and ``cryptography`` cannot be given
  one, so the sealed blobs are kept once written; ``--check`` verifies that they
  still open and that everything derived (sizes, info, padding) is unchanged.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from deniable import sealing
from deniable.survey import Survey

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "shared" / "vectors" / "sealing-vectors.json"
PROTOCOL = ROOT / "shared" / "vectors" / "protocol-vectors.json"
RECIPIENT = hashlib.sha256(b"deniable sealing vectors recipient key").digest()
SURVEY_ID = "sealing-vectors"


def _uuid(label: str) -> str:
    h = hashlib.sha256(label.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def survey_definition(previous: dict[str, Any] | None) -> dict[str, Any]:
    """A resolved /2 survey with one question per mechanism (from the protocol vectors)."""
    if previous is not None:
        return previous["survey"]
    questions = json.loads(PROTOCOL.read_text("utf-8"))["questions"]
    return {
        "format": "deniable.survey/2",
        "id": SURVEY_ID,
        "title": "Sealing vectors",
        "questions": list(questions.values()),
    }


def _reports(survey: Survey) -> list[dict[str, str]]:
    # Real reports from a fixed byte stream (tests only), so each decodes strictly.
    from tests.shared.generate_vectors import StreamSource, stream

    out = []
    for question in survey.questions:
        answer = {
            "yes_no": True,
            "single_choice": question.options[-1] if question.options else None,
            "multiple_choice": list(question.options[:1]),
        }.get(question.type, question.hi)
        payload = question.randomize(answer, StreamSource(stream(f"sealing/{question.id}")))
        out.append({"id": _uuid(question.id), "question": question.id, "payload": payload})
    return out


def build(previous: dict[str, Any] | None = None) -> dict[str, Any]:
    definition = survey_definition(previous and previous["deniable"])
    survey = Survey.from_dict(definition, resolved=True)
    reports = _reports(survey)
    public = sealing.public_bytes(sealing._private_key(RECIPIENT))
    units = [q.id for q in survey.questions] + [""]
    sizes = {unit: sealing.unit_size(survey, unit) for unit in units}
    kept = {
        (v["unit"], v["body"]): v["sealed"]
        for part in ("sealed", "other_orders")
        for v in (previous or {}).get("deniable", {}).get(part, [])
    }

    def sealed_vector(unit: str, body: bytes) -> dict[str, Any]:
        text = body.decode("ascii")
        blob = kept.get((unit, text))
        if blob is None:
            blob = sealing.seal(
                public, survey_id=SURVEY_ID, unit=unit, plaintext=body, size=sizes[unit]
            ).hex()
        return {"unit": unit, "size": sizes[unit], "body": text, "sealed": blob}

    sealed = [sealed_vector(r["question"], sealing.unit_body([r], r["question"])) for r in reports]
    sealed.append(sealed_vector("", sealing.unit_body(reports, "")))
    sealed.append(sealed_vector("", sealing.unit_body(reports[:1], "")))  # one answer, same size

    # The order of §6.1's direct body (id, question, payload), which a sender never
    # writes here, and the reports reversed in a submission: each opens to the same reports.
    def reordered(items: list[dict[str, str]], unit: str, why: str) -> dict[str, Any]:
        members = [
            {"id": r["id"], "question": r["question"], "payload": r["payload"]} for r in items
        ]
        document = members[0] if unit else {"reports": members}
        body = json.dumps(document, separators=(",", ":")).encode("ascii")
        return {"why": why, **sealed_vector(unit, body), "reports": items}

    other_orders = [
        reordered(
            reports[:1], reports[0]["question"], "members in the order id, question, payload"
        ),
        reordered(reports, "", "members in the order id, question, payload"),
        reordered(reports[::-1], "", "reports in reverse question order"),
    ]
    first = sealed[0]
    blob = bytes.fromhex(first["sealed"])
    flipped = bytearray(blob)
    flipped[40] ^= 0x01
    old = {v["why"]: v["sealed"] for v in (previous or {}).get("deniable", {}).get("invalid", [])}
    bad_padding = (
        bytes.fromhex(old["padding not all zeros"])
        if old
        else sealing._suite().encrypt(
            (5).to_bytes(4, "big") + b"hello" + b"\x00" * 3 + b"\x01",
            sealing._public_key(public),
            sealing.info(SURVEY_ID, "yes"),
        )
    )
    invalid = [
        {"why": "a ciphertext byte flipped", "unit": first["unit"], "sealed": bytes(flipped).hex()},
        {
            "why": "enc altered",
            "unit": first["unit"],
            "sealed": (bytes([blob[0] ^ 0x80]) + blob[1:]).hex(),
        },
        {"why": "sealed for another unit", "unit": sealed[1]["unit"], "sealed": first["sealed"]},
        {"why": "truncated", "unit": first["unit"], "sealed": blob[:-1].hex()},
        {"why": "padding not all zeros", "unit": "yes", "sealed": bad_padding.hex()},
    ]
    padding = [
        {"body": "", "size": 0, "padded": "00000000"},
        {"body": "616263", "size": 5, "padded": "00000003616263" + "0000"},
    ]
    return {
        "format": "deniable.sealing-vectors/1",
        "generator": "tests/shared/generate_sealing_vectors.py",
        "rfc9180": (previous or {}).get("rfc9180")
        or json.loads(PATH.read_text("utf-8"))["rfc9180"],
        "relay_noise": relay_noise((previous or {}).get("relay_noise"), public),
        "deniable": {
            "suite": sealing.SUITE_NAME,
            "format": sealing.FORMAT,
            "survey_id": SURVEY_ID,
            "recipient_private_key": RECIPIENT.hex(),
            "recipient_public_key": public.hex(),
            "survey": definition,
            "unit_sizes": sizes,
            "info": [
                {"survey_id": SURVEY_ID, "unit": unit, "info": sealing.info(SURVEY_ID, unit).hex()}
                for unit in ("yes", "")
            ],
            "padding": padding,
            "sealed": sealed,
            "other_orders": other_orders,
            "invalid": invalid,
        },
    }


NOISE_SURVEY_ID = "noise-vectors"
NOISE_QUESTIONS = ("yes", "grr5", "tools_sampled", "duchi")


def relay_noise(previous: dict[str, Any] | None, public: bytes) -> dict[str, Any]:
    """The ``relay_noise`` part: dummies of every supported mechanism (§11.7)."""
    from deniable.dummies import calibrate
    from deniable.wire import RelayBatch

    if previous is not None:
        definition = previous["survey"]
    else:
        questions = json.loads(PROTOCOL.read_text("utf-8"))["questions"]
        definition = {
            "format": "deniable.survey/2",
            "id": NOISE_SURVEY_ID,
            "title": "Relay noise vectors",
            "questions": [questions[q] for q in NOISE_QUESTIONS],
            "relay": {
                "url": "https://relay.example",
                "min_batch": 2,
                "shuffle_unit": "question",
                "noise": {"epsilon": 1.0, "delta": 1e-6, "law": calibrate(1.0, 1e-6).law.to_dict()},
            },
        }
    survey = Survey.from_dict(definition, resolved=True)
    kept = {(v["unit"], v["body"]): v["sealed"] for v in (previous or {}).get("dummies", [])}

    def dummy(unit: str, payload: str, label: str) -> dict[str, Any]:
        report = {"id": _uuid(label), "question": unit, "payload": payload}
        body = sealing.unit_body([report], unit).decode("ascii")
        size = sealing.unit_size(survey, unit)
        blob = (
            kept.get((unit, body))
            or sealing.seal(
                public, survey_id=survey.id, unit=unit, plaintext=body.encode("ascii"), size=size
            ).hex()
        )
        return {"unit": unit, "size": size, "body": body, "sealed": blob}

    outputs = {q.id: list(q.oracle.output_reports()) for q in survey.questions}
    dummies = [
        dummy(unit, values[y], f"noise/{unit}/{y}")
        for unit, values in outputs.items()
        for y in sorted({0, len(values) - 1})
    ]
    yes = [d for d in dummies if d["unit"] == "yes"]
    real = dummy("yes", outputs["yes"][1], "noise/yes/real")
    blobs = tuple(bytes.fromhex(v["sealed"]) for v in (yes[0], real, yes[1]))
    batch = RelayBatch(unit="yes", sealed=blobs, real_units=1)
    weak = {"epsilon": 1.0, "delta": 1e-6, "law": {"distribution": "binomial", "trials": 147}}
    noise = definition["relay"]["noise"]
    return {
        "survey": definition,
        "canonical": survey.canonical_bytes().decode("utf-8"),
        "output_reports": outputs,
        "dummies": [*dummies, real],
        "batch": {"real_units": 1, "body": batch.encode().decode("ascii")},
        "refused": [
            {"why": "delta 0: no dummy law gives it", "noise": {**noise, "delta": 0}},
            {"why": "delta above 1e-3", "noise": {**noise, "delta": 0.01}},
            {
                "why": "an unknown distribution",
                "noise": {**noise, "law": {"distribution": "laplace"}},
            },
            {"why": "shift above top", "noise": {**noise, "law": {**noise["law"], "shift": 55}}},
        ],
        "unverifiable": [
            {"why": "one trial fewer than the calibrated 148 misses delta 1e-6", "noise": weak}
        ],
        "extended": extended_noise(definition["relay"]),
    }


def extended_noise(relay: dict[str, Any]) -> dict[str, Any]:
    """A noised survey with an optional and conditional GRR question, an optional scale and an
    optional number (§11.7): accepted, with the non-responses' outputs among the dummies'."""
    gate = {"id": "gate", "type": "yes_no", "text": "Gate?", "epsilon": 1.0}
    questions = [
        gate,
        {
            "id": "brand",
            "type": "single_choice",
            "text": "Brand?",
            "epsilon": 2.0,
            "options": ["a", "b", "c"],
            "mechanism": "grr",
            "optional": True,
            "show_if": {"question": "gate", "equals": True},
        },
        {
            "id": "mood",
            "type": "scale",
            "text": "Mood?",
            "epsilon": 2.0,
            "points": 5,
            "mechanism": "grr",
            "optional": True,
        },
        {"id": "count", "type": "numeric", "text": "Count?", "epsilon": 2.0, "lo": 0, "hi": 9},
    ]
    questions[-1] |= {"optional": True, "show_if": {"question": "gate", "equals": True}}
    unresolved = {
        "format": "deniable.survey/2",
        "id": "noise-extended",
        "title": "Relay noise with non-responses",
        "questions": questions,
        "relay": relay,
    }
    survey = Survey.from_dict(unresolved)
    return {
        "survey": survey.to_dict(),
        "output_reports": {q.id: list(q.oracle.output_reports()) for q in survey.questions},
    }


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    previous = json.loads(PATH.read_text("utf-8"))
    text = render(build(previous if "deniable" in previous else None))
    if "--check" in argv:
        if PATH.read_text("utf-8") != text:
            print(f"{PATH} is stale: run python -m tests.shared.generate_sealing_vectors")
            return 1
        return 0
    PATH.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
