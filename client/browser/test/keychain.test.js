// Key rotation in the browser client (docs/key-rotation.md): a device pinned to key A follows a
// signed chain A → B → C to the key that signs the survey; a forged link, a truncated chain or
// a rollback is refused and nothing is posted.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { MemoryStorage, SignatureError, SurveyClient } from "../deniable.js";
import { canonicalBytes } from "../jcs.js";
import { b64encode, keyId } from "../deniable.js";

const VECTORS = JSON.parse(
  readFileSync(new URL("../../../shared/vectors/protocol-vectors.json", import.meta.url), "utf8"),
);
const DEFINITION = VECTORS.surveys.find((s) => s.name === "demo").definition;

async function newKey() {
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
  return { pair, raw: new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey)) };
}

const sign = async (key, bytes) =>
  new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, key.pair.privateKey, bytes));

async function link(sequence, previous, next) {
  const m = new TextEncoder().encode(
    `deniable-key-rotation/1\nsequence:${sequence}\nprevious:${b64encode(previous.raw)}\nnext:${b64encode(next.raw)}\n`,
  );
  return {
    sequence,
    previous_key_id: await keyId(previous.raw),
    previous_public_key: b64encode(previous.raw),
    key_id: await keyId(next.raw),
    public_key: b64encode(next.raw),
    signature: b64encode(await sign(previous, m)),
    endorsement: b64encode(await sign(next, m)),
  };
}

async function server(current, chain) {
  const survey = {
    status: "open",
    definition: DEFINITION,
    key_id: await keyId(current.raw),
    signature: b64encode(await sign(current, canonicalBytes(DEFINITION))),
  };
  const keyDocument = {
    algorithm: "Ed25519",
    public_key: b64encode(current.raw),
    key_id: await keyId(current.raw),
    sequence: chain.length,
    chain,
  };
  const posts = [];
  const fetch = async (url, init) => {
    if (init.method === "POST") {
      posts.push(url);
      return new Response("{}", { status: 201 });
    }
    return new Response(JSON.stringify(url.endsWith("/api/v1/key") ? keyDocument : survey), {
      status: 200,
    });
  };
  return { fetch, posts };
}

test("a pinned device follows a valid chain A → B → C and keeps following from C", async () => {
  const [A, B, C] = [await newKey(), await newKey(), await newKey()];
  const chain = [await link(1, A, B), await link(2, B, C)];
  const agg = await server(C, chain);
  const storage = new MemoryStorage();
  const client = new SurveyClient("https://agg.example", {
    publicKey: b64encode(A.raw),
    storage,
    fetch: agg.fetch,
  });
  const survey = await client.fetchSurvey("demo-workplace");
  assert.equal(survey.id, "demo-workplace");
  const pin = JSON.parse(storage.getItem("deniable.state/1")).keys["https://agg.example"];
  assert.equal(pin.key, b64encode(C.raw));
  assert.equal(pin.sequence, 2);
  assert.deepEqual(pin.retired, [await keyId(A.raw), await keyId(B.raw)]);
});

test("forged, truncated and rolled-back chains are refused; nothing is posted", async () => {
  const [A, B, C, X] = [await newKey(), await newKey(), await newKey(), await newKey()];
  const good = [await link(1, A, B), await link(2, B, C)];
  const forged = [good[0], { ...good[1], signature: good[0].signature }];
  const cases = [
    ["forged signature", A, C, forged],
    ["truncated chain", A, C, [good[1]].map((l) => ({ ...l, sequence: 1 }))],
    ["unknown key, no chain", A, X, []],
  ];
  for (const [name, pinned, current, chain] of cases) {
    const agg = await server(current, chain);
    const client = new SurveyClient("https://agg.example", {
      publicKey: b64encode(pinned.raw),
      storage: new MemoryStorage(),
      fetch: agg.fetch,
    });
    await assert.rejects(client.fetchSurvey("demo-workplace"), SignatureError, name);
    assert.equal(agg.posts.length, 0);
  }
  // A key document that is not JSON: a SignatureError too, not a SyntaxError.
  const garbled = await server(C, good),
    fetch = garbled.fetch;
  garbled.fetch = async (url, init) =>
    url.endsWith("/api/v1/key") ? new Response("<html>", { status: 200 }) : fetch(url, init);
  const refused = new SurveyClient("https://agg.example", {
    publicKey: b64encode(A.raw),
    storage: new MemoryStorage(),
    fetch: garbled.fetch,
  });
  await assert.rejects(refused.fetchSurvey("demo-workplace"), SignatureError);
  // A key document naming its key twice (a parser keeping the first would see another key): refused.
  const doubled = await server(C, good),
    inner = doubled.fetch;
  doubled.fetch = async (url, init) =>
    url.endsWith("/api/v1/key")
      ? new Response(
          (await (await inner(url, init)).text()).replace(
            '"algorithm":',
            `"public_key":"${b64encode(A.raw)}","algorithm":`,
          ),
          { status: 200 },
        )
      : inner(url, init);
  const twice = new SurveyClient("https://agg.example", {
    publicKey: b64encode(A.raw),
    storage: new MemoryStorage(),
    fetch: doubled.fetch,
  });
  await assert.rejects(
    twice.fetchSurvey("demo-workplace"),
    (error) => error instanceof SignatureError && /twice/.test(error.message),
  );
  // Rollback: a device that followed to C is offered A's old signature world again.
  const storage = new MemoryStorage();
  const forward = await server(C, good);
  await new SurveyClient("https://agg.example", {
    publicKey: b64encode(A.raw),
    storage,
    fetch: forward.fetch,
  }).fetchSurvey("demo-workplace");
  const back = await server(A, []);
  const client = new SurveyClient("https://agg.example", {
    publicKey: b64encode(A.raw),
    storage,
    fetch: back.fetch,
  });
  await assert.rejects(client.fetchSurvey("demo-workplace"), SignatureError);
});

test("trust on first use: only when asked for; the served key is pinned with its sequence, then kept", async () => {
  const [A, B, X] = [await newKey(), await newKey(), await newKey()];
  assert.throws(
    () => new SurveyClient("https://agg.example", { storage: new MemoryStorage() }),
    SignatureError,
  );
  const storage = new MemoryStorage();
  const first = await server(B, [await link(1, A, B)]);
  await new SurveyClient("https://agg.example", {
    trustOnFirstUse: true,
    storage,
    fetch: first.fetch,
  }).fetchSurvey("demo-workplace");
  const pin = JSON.parse(storage.getItem("deniable.state/1")).keys["https://agg.example"];
  assert.deepEqual([pin.key, pin.sequence], [b64encode(B.raw), 1]);
  // Pinned now: another key served later is not trusted.
  const other = await server(X, []);
  await assert.rejects(
    new SurveyClient("https://agg.example", {
      trustOnFirstUse: true,
      storage,
      fetch: other.fetch,
    }).fetchSurvey("demo-workplace"),
    SignatureError,
  );
  // A key document that fails its own checks pins nothing.
  const empty = new MemoryStorage(),
    bad = await server(B, [await link(1, A, X)]);
  await assert.rejects(
    new SurveyClient("https://agg.example", {
      trustOnFirstUse: true,
      storage: empty,
      fetch: bad.fetch,
    }).fetchSurvey("demo-workplace"),
    SignatureError,
  );
  assert.equal(empty.getItem("deniable.state/1"), null);
});

test("a survey naming a key_id other than the pin's after the rotation check is refused (protocol §6.2)", async () => {
  const [A, C, X] = [await newKey(), await newKey(), await newKey()];
  const chain = [await link(1, A, C)];
  // Signed by the current key C but naming a stranger: the pin follows A → C, then the survey is refused.
  const named = await server(C, chain),
    fetch = named.fetch;
  named.fetch = async (url, init) => {
    const response = await fetch(url, init);
    if (url.endsWith("/api/v1/key") || init.method === "POST") return response;
    return new Response(
      JSON.stringify({ ...(await response.json()), key_id: await keyId(X.raw) }),
      { status: 200 },
    );
  };
  const storage = new MemoryStorage();
  const client = new SurveyClient("https://agg.example", {
    publicKey: b64encode(A.raw),
    storage,
    fetch: named.fetch,
  });
  await assert.rejects(
    client.fetchSurvey("demo-workplace"),
    (error) => error instanceof SignatureError && error.reason === "key-id",
  );
  assert.equal(
    JSON.parse(storage.getItem("deniable.state/1")).keys["https://agg.example"].key,
    b64encode(C.raw),
  );
  // A stale document still signed by the retired key A, after the device moved to C: refused, pin kept.
  const stale = await server(A, []),
    current = await server(C, chain);
  stale.fetch = async (url, init) =>
    url.endsWith("/api/v1/key") ? current.fetch(url, init) : (await server(A, [])).fetch(url, init);
  const again = new SurveyClient("https://agg.example", {
    publicKey: b64encode(A.raw),
    storage,
    fetch: stale.fetch,
  });
  await assert.rejects(
    again.fetchSurvey("demo-workplace"),
    (error) => error instanceof SignatureError && error.reason === "key-id",
  );
  assert.equal(
    JSON.parse(storage.getItem("deniable.state/1")).keys["https://agg.example"].key,
    b64encode(C.raw),
  );
  assert.equal(named.posts.length + stale.posts.length, 0);
});
