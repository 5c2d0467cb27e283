#!/usr/bin/env python3
"""Write tests/data/chat_golden.json: chat templates rendered by Hugging Face transformers.

For the default model (SmolLM2-135M-Instruct, its own ChatML template from
tokenizer_config.json) the golden data holds the rendered text and the token ids of
``apply_chat_template(..., tokenize=True)``; for a Llama-3-style template (BOS, headers,
``trim``, a default system block, ``raise_exception`` on bad alternation) and a template
exercising Jinja features (trim_blocks / lstrip_blocks, ``namespace``, ``loop.last``,
``tojson`` with non-ASCII, ``{% generation %}``), the rendered text.

tests/test_chat.py checks pyvt's rendering against this file, so the tests need neither
torch nor transformers. Rerun after changing the cases (transformers must be installed):

    python tools/make_chat_golden.py [--model DIR]      # default: the pulled default model
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "chat_golden.json"

# A Llama-3.1-style template (written for these tests, same structure as Meta's).
LLAMA3_TEMPLATE = """{{- bos_token }}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] | trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{{- "Cutting Knowledge Date: December 2023\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- for message in messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

# No whitespace control markers: relies on trim_blocks + lstrip_blocks like many Hub templates.
FEATURES_TEMPLATE = """{% set ns = namespace(turns=0) %}
{% for message in messages %}
    {% if message.role == 'user' %}{% set ns.turns = ns.turns + 1 %}{% endif %}
    <{{ message.role }}{% if loop.last %} last{% endif %}>
    {% if message.role == 'assistant' %}{% generation %}{{ message.content }}{% endgeneration %}{% else %}{{ message.content }}{% endif %}

{% endfor %}
{% if add_generation_prompt %}
<assistant turn={{ ns.turns }}> {{ {"k": "é", "n": [1, 2]} | tojson }}
{% endif %}
{{ eos_token }}"""

DIALOGS = {
    "one_user": [{"role": "user", "content": "What is the capital of France?"}],
    "system_user": [
        {"role": "system", "content": "You are terse.  "},
        {"role": "user", "content": "  Say hi.\n"},
    ],
    "multi_turn": [
        {"role": "system", "content": "You answer in one word."},
        {"role": "user", "content": "Colour of the sky?"},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "And grass?"},
    ],
    "unicode": [
        {"role": "user", "content": "Traduis «bonjour» 🙂 — 日本語で?"},
        {"role": "assistant", "content": "こんにちは 👋"},
        {"role": "user", "content": "Merci!"},
    ],
}

LLAMA3_SPECIAL = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=None, help="default model folder (default: pyvt's cache)")
    args = ap.parse_args()
    try:
        import transformers
        from transformers import AutoTokenizer
    except ImportError:
        print("make_chat_golden: transformers is needed to make the golden data", file=sys.stderr)
        return 1
    folder = args.model
    if folder is None:
        from pyvt import hub

        folder = hub.reference(quiet=False)
    tok = AutoTokenizer.from_pretrained(str(folder))
    l3 = AutoTokenizer.from_pretrained(str(folder), **LLAMA3_SPECIAL)

    cases = []
    for name, msgs in DIALOGS.items():
        for agp in (True, False):
            text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=agp)
            ids = tok.apply_chat_template(msgs, tokenize=True, add_generation_prompt=agp)
            if not isinstance(ids, list):
                ids = ids["input_ids"]
            cases.append({"template": "default_model", "dialog": name, "add_generation_prompt": agp,
                          "text": text, "ids": [int(i) for i in ids]})
            text = l3.apply_chat_template(msgs, tokenize=False, add_generation_prompt=agp,
                                          chat_template=LLAMA3_TEMPLATE)
            cases.append({"template": "llama3", "dialog": name, "add_generation_prompt": agp, "text": text,
                          "variables": LLAMA3_SPECIAL})
            text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=agp,
                                           chat_template=FEATURES_TEMPLATE)
            cases.append({"template": "features", "dialog": name, "add_generation_prompt": agp, "text": text,
                          "variables": {"eos_token": tok.eos_token}})
    data = {
        "made_by": "tools/make_chat_golden.py",
        "transformers": transformers.__version__,
        "templates": {"default_model": tok.chat_template, "llama3": LLAMA3_TEMPLATE,
                      "features": FEATURES_TEMPLATE},
        "dialogs": DIALOGS,
        "cases": cases,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
