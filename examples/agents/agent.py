"""A small agent of real code, on the official `openai` Python SDK: a plain
tool-calling loop that plays one attempt of an `external` toolmock case.

The agent owns its prompt and its function tools, as any agent does; toolmock
owns what the tools answer. Every function call goes to toolmock's tool-call
endpoint (POST /api/attempts/{id}/tool-calls) with the attempt's capability:

  200  the result, exactly as rendered: sent to the model as the tool message
  422  a tool input error: sent to the model, so it can recover
  424  a harness error: the harness is broken; the loop stops and the model
       never sees it

and the attempt ends with POST /api/attempts/{id}/finish, which judges the
case over what toolmock recorded (never over what this agent claims).

  python agent.py --toolmock http://127.0.0.1:8080 --attempt ID --capability CAP \
      --model-url https://api.openai.com/v1 --model gpt-4.1-mini "Note down milk."

The model's key is read from OPENAI_API_KEY (any value for a local server).
"""

import argparse
import json
import os
import sys
import urllib.error
import urllib.request

from openai import OpenAI

PROMPT = "You keep notes."

# The agent's tools: each function name maps to a toolmock tool and operation.
TOOLS = {
    "notes__add": ("notes", "add"),
    "notes__get": ("notes", "get"),
}
FUNCTIONS = [
    {
        "type": "function",
        "function": {
            "name": "notes__add",
            "description": "Adds a note.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "notes__get",
            "description": "Reads the last note.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]


class HarnessError(Exception):
    """toolmock says the harness is at fault: stop, never tell the model."""


def post(url, capability, body):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {capability}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def call_tool(args, name, arguments):
    """One function call through toolmock; the text for the tool message."""
    if name not in TOOLS:
        return json.dumps({"error": {"code": "unknown_function", "message": f"no function {name}"}})
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError as e:
        return json.dumps({"error": {"code": "invalid_arguments_json", "message": str(e)}})
    tool, operation = TOOLS[name]
    status, text = post(
        f"{args.toolmock}/api/attempts/{args.attempt}/tool-calls",
        args.capability,
        {"tool": tool, "operation": operation, "arguments": parsed},
    )
    if status in (200, 422):
        return text
    raise HarnessError(f"{status}: {text}")


def play(args):
    client = OpenAI(base_url=args.model_url, api_key=os.environ.get("OPENAI_API_KEY", "none"))
    messages = [{"role": "system", "content": PROMPT}]
    for user in args.messages:
        messages.append({"role": "user", "content": user})
        for _ in range(args.max_turns):
            reply = client.chat.completions.create(model=args.model, messages=messages, tools=FUNCTIONS)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                break
            for tool_call in message.tool_calls:
                content = call_tool(args, tool_call.function.name, tool_call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": content})
        else:
            break
    return messages


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--toolmock", required=True, help="the toolmock API's base URL")
    parser.add_argument("--attempt", required=True)
    parser.add_argument("--capability", required=True)
    parser.add_argument("--model-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("messages", nargs="+")
    args = parser.parse_args()
    try:
        messages = play(args)
        print(json.dumps({"final_answer": messages[-1].get("content")}), file=sys.stderr)
    except HarnessError as e:
        print(f"harness error, stopping: {e}", file=sys.stderr)
    status, text = post(f"{args.toolmock}/api/attempts/{args.attempt}/finish", args.capability, {})
    print(text)
    return 0 if status == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
