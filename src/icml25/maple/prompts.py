"""How MAPLE writes its prompts, and a language model that reads them as a multi-turn chat.

:class:`Template` writes demonstrations and a query as one text (an instruction listing the
labels, then ``Text: ... / Category: ...`` blocks separated by blank lines, the query's answer
slot left empty), as the official prompts do; :meth:`Template.parse` reads such a text back.
:class:`MultiTurnLM` is an :class:`~icml25.core.llm.HFLanguageModel` that feeds the same
prompt to the model as a chat: the instruction as the system turn, each demonstration as a user
turn (its text) answered by an assistant turn (its label), then the query as the last user turn.
A :class:`~icml25.maple.LabelScorer` over it scores the label as the first token of the
assistant's answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from icml25.core.llm import HFLanguageModel


@dataclass(frozen=True)
class Template:
    """How demonstrations and queries are written (the official prompts list every allowed
    label and ask for a bare answer; embedding texts are the template with the answer slot
    empty, or filled with the (pseudo-)label for ``G'``)."""

    instruction: str = (
        "Classify each text into one of these categories: {labels}. Answer with the category only."
    )
    input_prefix: str = "Text: "
    output_prefix: str = "Category: "

    def item(self, text: str, label: str | None = None) -> str:
        tail = f" {label}" if label is not None else ""
        return f"{self.input_prefix}{text}\n{self.output_prefix}".rstrip() + tail

    def prompt(self, demos: Sequence[tuple[str, str]], query: str, labels: Sequence[str]) -> str:
        head = self.instruction.format(labels=", ".join(labels))
        body = "".join(self.item(x, y) + "\n\n" for x, y in demos)
        return f"{head}\n\n{body}{self.item(query)}"

    def parse(self, prompt: str) -> tuple[str, list[tuple[str, str]], str]:
        """``(instruction, demos, query)`` of a text written by :meth:`prompt` (texts and
        labels must not contain blank lines)."""
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        blocks = prompt.split("\n\n")
        if len(blocks) < 2:
            raise ValueError(f"prompt must be written by Template.prompt, got {prompt!r:.80}")
        sep = "\n" + self.output_prefix.rstrip()

        def split(block: str) -> tuple[str, str]:
            if not block.startswith(self.input_prefix) or sep not in block:
                raise ValueError(
                    f"prompt must be written by Template.prompt: block {block!r:.60} is not "
                    f"'{self.input_prefix}...{sep} ...'"
                )
            text, answer = block[len(self.input_prefix) :].rsplit(sep, 1)
            return text, answer.strip()

        demos = [split(b) for b in blocks[1:-1]]
        query, answer = split(blocks[-1])
        if answer:
            raise ValueError(f"the query's answer slot must be empty, got {answer!r}")
        return blocks[0], demos, query


class MultiTurnLM(HFLanguageModel):
    """A chat model fed MAPLE's prompts as a multi-turn conversation.

    ``text(prompt, chat=True)`` parses ``prompt`` with ``template`` and applies the tokenizer's
    chat template to: system = the instruction; per demonstration a user turn
    ``input_prefix + text`` and an assistant turn with the label; a last user turn with the
    query; the assistant's turn opened. ``chat=False`` feeds the text as it is.
    """

    def __init__(self, model: Any, tokenizer: Any, template: Template | None = None) -> None:
        super().__init__(model, tokenizer)
        if template is not None and not isinstance(template, Template):
            raise TypeError(f"template must be a Template, got {type(template).__name__}")
        self.template = template or Template()

    def messages(self, prompt: str) -> list[dict[str, str]]:
        """The chat turns of one prompt."""
        head, demos, query = self.template.parse(prompt)
        pre = self.template.input_prefix
        out = [{"role": "system", "content": head}]
        for x, y in demos:
            out += [{"role": "user", "content": pre + x}, {"role": "assistant", "content": y}]
        out.append({"role": "user", "content": pre + query})
        return out

    def text(self, prompt: str, *, chat: bool = True) -> str:
        if not chat:
            return prompt
        return str(
            self.tokenizer.apply_chat_template(
                self.messages(prompt), tokenize=False, add_generation_prompt=True
            )
        )
