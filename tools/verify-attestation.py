#!/usr/bin/env python3
"""Verify a groundgate execution or call attestation without groundgate.

usage: verify-attestation.py ENVELOPE.json PUBLIC_KEY.pem

An independent implementation of docs/attestations.md, on the standard
library and python3-cryptography (Debian: apt-get install python3-cryptography):

  1. the envelope is DSSE JSON with payloadType application/vnd.in-toto+json;
  2. a signature whose keyid (when it has one) is the key's id verifies with
     Ed25519 over the DSSE pre-authentication encoding (PAE), computed here:
     "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body;
  3. the payload is an in-toto Statement v1 with one of groundgate's
     predicateTypes and one subject with digest {"sha256": HEX}: for an
     execution (.../attestation/execution/v1) named
     "groundgate-execution:sha256:HEX", for a call to an upstream tool
     (.../attestation/call/v1, SPEC section 14) "groundgate-call:sha256:HEX";
  4. the predicate's footprint is that execution: its hash is the subject's,
     and SHA-256 over its eight layer digests (SPEC section 6 order, each
     followed by a newline) recomputes to it;
     or that call: verify-call.py's checks (beside this file): its hash is
     the subject's, SHA-256 over its seven layer digests (registry, request,
     evidence, state, policies, upstream, result, each followed by a
     newline) recomputes to it, the request layer is SHA-256 of the RFC 8785
     form of {"tool", "arguments"}, and the fields the layers repeat agree;
     and its materials are the ones the footprint gives: tool (identity),
     discovery (when the call had evidence), policies, upstream (tool_digest).

Exit status 0 when all hold, 1 with a message on stderr when one does not,
2 on a usage error.
"""

import base64
import binascii
import hashlib
import importlib.util
import json
import os
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://groundgate.dev/attestation/execution/v1"
SUBJECT_PREFIX = "groundgate-execution:"
CALL_PREDICATE_TYPE = "https://groundgate.dev/attestation/call/v1"
CALL_SUBJECT_PREFIX = "groundgate-call:"
LAYERS = ["registry", "request", "morphisms", "plans", "artifacts", "score", "selection", "data"]
MAX_BYTES = 64 << 20


class Failure(Exception):
    pass


def load_verify_call():
    """verify-call.py, beside this file: the call footprint's checks."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verify-call.py")
    spec = importlib.util.spec_from_file_location("verify_call", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def pae(payload_type: bytes, body: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding."""
    return b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type, len(body), body)


def b64decode(s, what):
    """Standard or URL-safe base64, as DSSE allows; padding required."""
    if not isinstance(s, str):
        raise Failure(f"{what} is not a string")
    for alt in (None, b"-_"):
        try:
            return base64.b64decode(s, altchars=alt, validate=True)
        except (binascii.Error, ValueError):
            pass
    raise Failure(f"{what} is not base64")


def no_duplicates(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise Failure(f"duplicate key {k!r}")
        obj[k] = v
    return obj


def loads(b, what):
    try:
        return json.loads(b, object_pairs_hook=no_duplicates)
    except (ValueError, UnicodeDecodeError) as e:
        raise Failure(f"{what} is not JSON: {e}") from None


def load_key(path):
    with open(path, "rb") as f:
        key = serialization.load_pem_public_key(f.read())
    if not isinstance(key, Ed25519PublicKey):
        raise Failure(f"{path}: not an Ed25519 public key")
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return key, "sha256:" + hashlib.sha256(der).hexdigest()


def verify(envelope_bytes, key, keyid):
    if len(envelope_bytes) > MAX_BYTES:
        raise Failure(f"the envelope is {len(envelope_bytes)} bytes, over {MAX_BYTES}")
    env = loads(envelope_bytes, "the envelope")
    if not isinstance(env, dict) or set(env) != {"payload", "payloadType", "signatures"}:
        raise Failure("not a DSSE envelope: want exactly payload, payloadType and signatures")
    if env["payloadType"] != PAYLOAD_TYPE:
        raise Failure(f"payloadType {env['payloadType']!r}, want {PAYLOAD_TYPE!r}")
    payload = b64decode(env["payload"], "payload")
    sigs = env["signatures"]
    if not isinstance(sigs, list) or not sigs:
        raise Failure("the envelope has no signatures")
    message = pae(PAYLOAD_TYPE.encode(), payload)
    verified = False
    for s in sigs:
        if not isinstance(s, dict):
            raise Failure("a signature is not an object")
        if s.get("keyid") and s["keyid"] != keyid:
            continue  # made with another key
        try:
            key.verify(b64decode(s.get("sig"), "sig"), message)
            verified = True
            break
        except InvalidSignature:
            continue
    if not verified:
        raise Failure(f"no signature verifies with key {keyid}")

    st = loads(payload, "the payload")
    if not isinstance(st, dict):
        raise Failure("the statement is not an object")
    if st.get("_type") != STATEMENT_TYPE:
        raise Failure(f"_type {st.get('_type')!r}, want {STATEMENT_TYPE!r}")
    kind = st.get("predicateType")
    if kind not in (PREDICATE_TYPE, CALL_PREDICATE_TYPE):
        raise Failure(f"predicateType {kind!r}, want {PREDICATE_TYPE!r} or {CALL_PREDICATE_TYPE!r}")
    prefix = CALL_SUBJECT_PREFIX if kind == CALL_PREDICATE_TYPE else SUBJECT_PREFIX
    subject = st.get("subject")
    if not isinstance(subject, list) or len(subject) != 1 or not isinstance(subject[0], dict):
        raise Failure("want exactly one subject")
    digest = subject[0].get("digest")
    if not isinstance(digest, dict) or set(digest) != {"sha256"} or not isinstance(digest["sha256"], str):
        raise Failure(f"subject digest {digest!r} is not {{'sha256': HEX}}")
    hexdigest = digest["sha256"]
    if len(hexdigest) != 64 or any(c not in "0123456789abcdef" for c in hexdigest):
        raise Failure(f"subject digest {hexdigest!r} is not 64 lowercase hex digits")
    execution = "sha256:" + hexdigest
    if subject[0].get("name") != prefix + execution:
        raise Failure(f"subject name {subject[0].get('name')!r}, want {prefix + execution!r}")
    predicate = st.get("predicate")
    if not isinstance(predicate, dict) or not isinstance(predicate.get("footprint"), dict):
        raise Failure("the predicate has no footprint")
    fp = predicate["footprint"]
    if kind == CALL_PREDICATE_TYPE:
        verify_call_footprint(fp, predicate.get("materials"), execution)
        return st, execution
    if fp.get("hash") != execution:
        raise Failure(f"the footprint's hash {fp.get('hash')!r} is not the subject's {execution}")
    layers = fp.get("layers")
    if not isinstance(layers, dict) or not all(isinstance(layers.get(k), str) for k in LAYERS):
        raise Failure("the footprint's layers are incomplete")
    recomputed = "sha256:" + hashlib.sha256("".join(layers[k] + "\n" for k in LAYERS).encode()).hexdigest()
    if recomputed != execution:
        raise Failure(f"the footprint's layers hash to {recomputed}, not {execution}")
    return st, execution


def digest_set(d):
    """An in-toto DigestSet from "ALGO:HEX"."""
    algo, _, hexdigest = d.partition(":")
    return {algo: hexdigest}


def verify_call_footprint(fp, materials, call):
    vc = load_verify_call()
    try:
        vc.check_call(fp, call)
    except vc.Failure as e:
        raise Failure(str(e)) from None
    want = [{"name": "tool", "digest": digest_set(fp["identity"])}]
    if fp.get("discovery") is not None:
        want.append({"name": "discovery", "digest": digest_set(fp["discovery"])})
    want.append({"name": "policies", "digest": digest_set(fp["layers"]["policies"])})
    want.append({"name": "upstream", "digest": digest_set(fp["layers"]["upstream"])})
    if materials != want:
        raise Failure(f"the materials are {materials!r}; the footprint gives {want!r}")


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        key, keyid = load_key(argv[2])
        with open(argv[1], "rb") as f:
            data = f.read(MAX_BYTES + 1)
        st, execution = verify(data, key, keyid)
    except (Failure, OSError, ValueError) as e:
        print(f"verify-attestation: FAIL: {e}", file=sys.stderr)
        return 1
    names = ", ".join(m.get("name", "?") for m in st["predicate"].get("materials", []))
    kind = "call" if st["predicateType"] == CALL_PREDICATE_TYPE else "execution"
    print(f"OK: {kind} {execution} signed by {keyid} (materials: {names})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
