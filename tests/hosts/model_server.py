"""A scripted model API on loopback for the real-host tier (tests/hosts/).

It speaks the three wire formats the hosts use, streaming as each expects:

* the Anthropic Messages API (`POST /v1/messages`, server-sent events with
  `message_start` ... `message_stop`), for Claude Code (`ANTHROPIC_BASE_URL`);
* the Gemini API (`POST /v1beta/models/M:streamGenerateContent?alt=sse`,
  `data:` lines of `GenerateContentResponse`; `:generateContent` and
  `:countTokens` answered whole), for Gemini CLI (`GOOGLE_GEMINI_BASE_URL`);
* the OpenAI Responses API (`POST /v1/responses`, `response.created` ...
  `response.completed`), for Codex CLI (a model provider whose `base_url`
  is this server).

It is no model: it plays a plan. Each request of a conversation is
answered with the next step of the plan, decided from the request itself
(how many of the plan's tool calls already have a result in it), so the
host's own loop drives it:

    info   -> call the tool whose name ends in `conda_info`, {}
    search -> the tool ending in `conda_search`, {"match_spec": ["python"]}
    create -> the tool ending in `conda_create`, {"name": ENV, "packages": [...]}
    answer -> a final text naming what each call returned

Claude Code defers MCP tools behind its tool search: when the request has
no tool of the plan but has the search tool, the step is a call of that
tool selecting the plan's tools first.

A request that is not part of a conversation with tools (a title, a
routing or next-speaker question, a quota probe) is answered with a short
text or, when it asks for JSON, `{}`-like JSON, and recorded as such.

Every request is recorded, one JSON object a line, in `--record FILE`:
`{"api", "path", "stream", "kind" ("plan" | "side"), "step", "tools"
(the tool names the request carried), "mentioned" (every conda tool name
anywhere in the request: Claude Code lists deferred tools by name only),
"tool_bytes" (bytes of all the tools' JSON), "conda_schemas" ({name:
schema} of the tools named after conda, i.e. the MCP server's),
"conda_tool_bytes" (their bytes; bytes are of compact UTF-8 JSON),
"conda_descriptions" ({name: description} of those tools), "tool_schemas" ({name: schema} of the
plan's tools), "results" ({step: the text of that tool result as the host
sent it back}), "found" (which of the strings looked for, `Script`'s
`look_for`, are in the request)}`. With `MODEL_SERVER_VERBOSE` set, each request is also
logged on stderr.

Usage: python3 model_server.py --record FILE [--port 0] [--env-name NAME]
Prints `listening PORT` on stdout once it accepts connections. Stops on
SIGTERM or when stdin closes. Standard library only; binds 127.0.0.1 only.
"""

import argparse
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PLAN = ("info", "search", "create")
SUFFIX = {"info": "conda_info", "search": "conda_search", "create": "conda_create"}


def plan_args(step, env_name, schema):
    """The arguments the model gives each planned call. Gemini CLI adds a
    boolean `wait_for_previous` to every tool and tells the model to set it
    on a call that depends on earlier ones: search and create do, as a
    model following that instruction would."""
    if step == "info":
        args = {}
    elif step == "search":
        args = {"match_spec": "python"}
    else:
        args = {"name": env_name, "packages": ["python"], "yes": True}
    props = (schema or {}).get("properties") or {}
    if step != "info" and "wait_for_previous" in props:
        args["wait_for_previous"] = True
    return args


def tool_for(step, names):
    """The tool of `names` that plays `step` (by the suffix of its name, as
    each host prefixes MCP tools its own way), or None."""
    want = SUFFIX[step]
    for n in names:
        if n == want or n.endswith("__" + want) or n.endswith("_" + want) and "conda" in n[: -len(want)]:
            return n
    for n in names:
        if n.endswith(want):
            return n
    return None


class Recorder:
    def __init__(self, path, bodies=None):
        self.path = path
        self.bodies = bodies
        self.count = 0
        self.lock = threading.Lock()

    def body(self, api, body):
        """Keeps the whole request body (for a person looking into a run):
        BODIES/NNN-api.json."""
        if not self.bodies:
            return
        with self.lock:
            self.count += 1
            n = self.count
        os.makedirs(self.bodies, exist_ok=True)
        with open(os.path.join(self.bodies, "%03d-%s.json" % (n, api)), "w", encoding="utf-8") as f:
            json.dump(body, f, indent=1, sort_keys=True)

    def write(self, record):
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")


def text_of(content):
    """The text of a tool result's content in any of the three formats."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(text_of(c) for c in content)
    if isinstance(content, dict):
        for k in ("text", "output", "content", "response"):
            if k in content:
                v = content[k]
                return v if isinstance(v, str) else json.dumps(v, sort_keys=True)
        return json.dumps(content, sort_keys=True)
    return str(content)


def json_bytes(value):
    """Bytes of `value` as compact UTF-8 JSON (what serde_json writes)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def descriptions_of(raw_tools):
    """{name: description} of a request's tools in any of the three
    formats (a Codex namespace's tools as `NAMESPACE__INNER`)."""
    out = {}
    for t in raw_tools:
        if t.get("type") == "namespace":
            for inner in t.get("tools") or []:
                out["%s__%s" % (t.get("name"), inner.get("name"))] = inner.get("description")
            continue
        name = t.get("name") or (t.get("function") or {}).get("name")
        if name:
            out[name] = t.get("description") or (t.get("function") or {}).get("description")
    return out


def strings_of(value):
    """Every string in a JSON value (keys and values), decoded: a name is
    found in the text a host wrote, not in its JSON escaping (`\\n` before
    a name is a newline, not an `n`)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings_of(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_of(v)


# --- each API: the tools of a request, and the tool calls/results so far ---


def anthropic_view(body):
    """(tool names, {name: schema}, [(tool_use name, id)], {id: result text})."""
    tools = body.get("tools") or []
    names = [t.get("name") for t in tools if t.get("name")]
    schemas = {t["name"]: t.get("input_schema") for t in tools if t.get("name")}
    uses, results = [], {}
    for m in body.get("messages") or []:
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for c in content:
            if c.get("type") == "tool_use":
                uses.append((c.get("name"), c.get("id")))
            elif c.get("type") == "tool_result":
                results[c.get("tool_use_id")] = text_of(c.get("content"))
    return names, schemas, tools, uses, results


def gemini_view(body):
    decls = []
    for t in body.get("tools") or []:
        decls.extend(t.get("functionDeclarations") or t.get("function_declarations") or [])
    names = [d.get("name") for d in decls if d.get("name")]
    schemas = {
        d["name"]: d.get("parametersJsonSchema") or d.get("parameters") for d in decls if d.get("name")
    }
    uses, results = [], {}
    n = 0
    for c in body.get("contents") or []:
        for p in c.get("parts") or []:
            if "functionCall" in p:
                n += 1
                uses.append((p["functionCall"].get("name"), p["functionCall"].get("id") or "g%d" % n))
            elif "functionResponse" in p:
                fr = p["functionResponse"]
                key = fr.get("id") or next(
                    (i for (nm, i) in reversed(uses) if nm == fr.get("name")), fr.get("name")
                )
                results[key] = text_of(fr.get("response"))
    return names, schemas, decls, uses, results


def responses_view(body):
    """Codex groups an MCP server's tools in one tool of type `namespace`
    (`mcp__conda`, its `tools` inside); a call of one names the inner tool
    and its `namespace`. Here a namespaced tool is `NAMESPACE__INNER`."""
    tools = body.get("tools") or []
    names, schemas = [], {}
    for t in tools:
        if t.get("type") == "namespace":
            for inner in t.get("tools") or []:
                full = "%s__%s" % (t.get("name"), inner.get("name"))
                names.append(full)
                schemas[full] = inner.get("parameters")
            continue
        name = t.get("name") or (t.get("function") or {}).get("name")
        if name:
            names.append(name)
            schemas[name] = t.get("parameters") or (t.get("function") or {}).get("parameters")
    uses, results = [], {}
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            name = item.get("name")
            if item.get("namespace"):
                name = "%s__%s" % (item["namespace"], name)
            uses.append((name, item.get("call_id")))
        elif item.get("type") == "function_call_output":
            results[item.get("call_id")] = text_of(item.get("output"))
    return names, schemas, tools, uses, results


# --- the plan ---


class Script:
    def __init__(self, env_name, recorder, look_for=()):
        self.env_name = env_name
        self.look_for = list(look_for)
        self.recorder = recorder
        self.counter = 0
        self.lock = threading.Lock()

    def next_id(self, prefix):
        with self.lock:
            self.counter += 1
            return "%s_%04d" % (prefix, self.counter)

    def decide(self, api, path, stream, view, body):
        """The next step: ("call", tool name, arguments, step) or
        ("text", text, step), recorded."""
        names, schemas, raw_tools, uses, results = view
        descriptions = descriptions_of(raw_tools)
        self.recorder.body(api, body)
        text = "\n".join(strings_of(body))
        record = {
            # conda tool names the request mentions anywhere (tools, system
            # prompt, a deferred-tools list), whatever the host's prefix
            "mentioned": sorted(set(re.findall(r"[A-Za-z0-9_]*conda_[a-z0-9_]+", text))),
            "api": api,
            "path": path,
            "stream": stream,
            "tools": names,
            "tool_bytes": json_bytes(raw_tools),
            # the MCP server's tools (named after conda) and their bytes
            "conda_schemas": {n: schemas.get(n) for n in names if "conda" in n},
            "conda_tool_bytes": sum(json_bytes(t) for t in raw_tools if "conda" in str(t.get("name") or "")),
            "conda_descriptions": {n: descriptions.get(n) for n in names if "conda" in n},
            "tool_schemas": {},
            "results": {},
            # which of the strings looked for are in the request
            "found": [s for s in self.look_for if s in text],
        }
        done = []
        for step in PLAN:
            for (nm, i) in uses:
                if tool_for(step, [nm]) == nm and i in results:
                    done.append(step)
                    record["results"][step] = results[i]
                    break
        for step in PLAN:
            t = tool_for(step, names)
            if t:
                record["tool_schemas"][t] = schemas.get(t)
        if not names and not uses:
            record.update(kind="side", step="side")
            self.recorder.write(record)
            return ("text", "ok", "side")
        record["kind"] = "plan"
        remaining = [s for s in PLAN if s not in done]
        if remaining:
            step = remaining[0]
            tool = tool_for(step, names)
            if tool is None:
                search = next((n for n in names if n.lower() in ("toolsearch", "tool_search")), None)
                if search and not any(nm == search for (nm, _) in uses[-1:]):
                    wanted = ",".join(
                        "mcp__conda__" + SUFFIX[s] for s in PLAN
                    )
                    record["step"] = "tool_search"
                    self.recorder.write(record)
                    return ("call", search, {"query": "select:" + wanted, "max_results": 10}, "tool_search")
                record["step"] = "missing:" + step
                self.recorder.write(record)
                return ("text", "PLAN FAILED: no tool for %s among %d tools" % (step, len(names)), "missing")
            record["step"] = step
            self.recorder.write(record)
            return ("call", tool, plan_args(step, self.env_name, schemas.get(tool)), step)
        record["step"] = "answer"
        self.recorder.write(record)
        summary = "; ".join("%s: %d bytes" % (s, len(record["results"].get(s, ""))) for s in PLAN)
        return ("text", "PLAN DONE: " + summary, "answer")


# --- the wire formats ---


def sse(handler, events):
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for name, data in events:
        chunk = ""
        if name:
            chunk += "event: %s\n" % name
        chunk += "data: %s\n\n" % json.dumps(data)
        handler.wfile.write(chunk.encode())
        handler.wfile.flush()
    handler.close_connection = True


def send_json(handler, obj, status=200):
    data = json.dumps(obj).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def anthropic_answer(handler, script, body, path):
    stream = bool(body.get("stream"))
    decision = script.decide("anthropic", path, stream, anthropic_view(body), body)
    model = body.get("model", "claude-scripted")
    mid = script.next_id("msg")
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    if decision[0] == "call":
        _, name, args, _ = decision
        block = {"type": "tool_use", "id": script.next_id("toolu"), "name": name, "input": args}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": decision[1]}
        stop = "end_turn"
    if not stream:
        send_json(handler, {
            "id": mid, "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage,
        })
        return
    start_block = dict(block, input={}) if block["type"] == "tool_use" else {"type": "text", "text": ""}
    delta = (
        {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        if block["type"] == "tool_use"
        else {"type": "text_delta", "text": block["text"]}
    )
    sse(handler, [
        ("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start_block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def gemini_answer(handler, script, body, path):
    stream = ":streamGenerateContent" in path
    if ":countTokens" in path:
        send_json(handler, {"totalTokens": 10})
        return
    gen = body.get("generationConfig") or body.get("generation_config") or {}
    wants_json = gen.get("responseMimeType") == "application/json" or "responseJsonSchema" in gen \
        or "responseSchema" in gen
    view = gemini_view(body)
    if wants_json and not view[0]:
        script.recorder.write({"api": "gemini", "path": path, "stream": stream, "kind": "side",
                               "step": "side-json", "tools": [], "tool_bytes": 0,
                               "tool_schemas": {}, "results": {}})
        text = json.dumps({"next_speaker": "user", "reasoning": "scripted",
                           "model_choice": "flash", "complexity_score": 1})
        part = {"text": text}
    else:
        decision = script.decide("gemini", path, stream, view, body)
        if decision[0] == "call":
            part = {"functionCall": {"name": decision[1], "args": decision[2]}}
        else:
            part = {"text": decision[1]}
    response = {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-scripted",
    }
    if stream:
        sse(handler, [(None, response)])
    else:
        send_json(handler, response)


def responses_answer(handler, script, body, path):
    stream = body.get("stream", False)
    decision = script.decide("openai", path, stream, responses_view(body), body)
    rid = script.next_id("resp")
    if decision[0] == "call":
        item = {"type": "function_call", "id": script.next_id("fc"), "call_id": script.next_id("call"),
                "name": decision[1], "arguments": json.dumps(decision[2]), "status": "completed"}
        namespaces = [t.get("name") for t in body.get("tools") or [] if t.get("type") == "namespace"]
        for ns in namespaces:
            if decision[1].startswith(ns + "__"):
                item["name"] = decision[1][len(ns) + 2:]
                item["namespace"] = ns
    else:
        item = {"type": "message", "id": script.next_id("msg"), "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": decision[1], "annotations": []}]}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    base = {"id": rid, "object": "response", "status": "in_progress", "model": body.get("model"), "output": []}
    done = dict(base, status="completed", output=[item], usage=usage)
    if not stream:
        send_json(handler, done)
        return
    sse(handler, [
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": base}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                        "output_index": 0, "item": dict(item, status="in_progress")}),
        ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 2,
                                       "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "sequence_number": 3, "response": done}),
    ])


def make_handler(script, recorder):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            if os.environ.get("MODEL_SERVER_VERBOSE"):
                sys.stderr.write("model_server: " + (fmt % args) + "\n")

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            if self.headers.get("Content-Encoding") in ("gzip",):
                import gzip
                raw = gzip.decompress(raw)
            elif self.headers.get("Content-Encoding") in ("zstd",):
                raise ValueError("zstd bodies are not supported")
            try:
                return json.loads(raw or b"{}")
            except ValueError:
                return {}

        def do_HEAD(self):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            recorder.write({"api": "other", "path": self.path, "kind": "other", "method": "GET"})
            if self.path.rstrip("/").endswith("/models"):
                send_json(self, {"data": [], "models": [], "object": "list"})
            else:
                send_json(self, {})

        def do_POST(self):
            path = self.path
            body = self.body()
            try:
                if "/v1/messages" in path:
                    if "count_tokens" in path:
                        send_json(self, {"input_tokens": 10})
                        return
                    anthropic_answer(self, script, body, path)
                elif "/models/" in path and (":generateContent" in path or ":streamGenerateContent" in path
                                             or ":countTokens" in path):
                    gemini_answer(self, script, body, path)
                elif path.rstrip("/").endswith("/responses"):
                    responses_answer(self, script, body, path)
                else:
                    recorder.write({"api": "other", "path": path, "kind": "other", "method": "POST"})
                    send_json(self, {})
            except BrokenPipeError:
                pass

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--env-name", default="hosts-tier-env")
    ap.add_argument("--bodies", help="keep every request body in this folder")
    a = ap.parse_args()
    recorder = Recorder(a.record, a.bodies)
    script = Script(a.env_name, recorder)
    server = ThreadingHTTPServer(("127.0.0.1", a.port), make_handler(script, recorder))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("listening %d" % server.server_address[1], flush=True)
    try:
        sys.stdin.read()
    except KeyboardInterrupt:
        pass
    server.shutdown()


if __name__ == "__main__":
    main()
