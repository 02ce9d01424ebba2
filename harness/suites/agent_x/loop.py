"""The Agent-X episode in its two modes, on pixelbox's sandbox and traces.

``official`` (``--mode gen``), as the official inference scripts do it: one model call; the system
prompt (ours, same content: the task, the tool metadata as JSON, the step format and an example)
then one user message (one image: the image, then ``Query: ...``; several images or video frames:
``Query: ...`` then the images). The reply is one JSON object ``{"reasoning_steps": [...],
"final_answer": {"value", "justification"}}``: code fences stripped, JSON first, then a Python literal,
else empty steps and answer (as the official script falls back). The model writes the tool outputs
itself; nothing runs.

``executed`` (``--mode atm``): the 14 tools as real function-calling tools (:mod:`.tools` says how
each runs). Every call gets a ``tool`` reply; images a tool makes follow in one user message and
take the next image number. A reply without tool calls ends the episode; its JSON ``final_answer``
(or ``<answer>``, or the whole reply) is the answer. The prediction's ``reasoning_steps`` are built
from the trace: one per executed call (task: the model's text before it; tool; input; the real
output; thought: the model's next text), so the step metrics judge what really ran.

Both leave the prediction (``reasoning_steps``, ``final_answer``) in ``episode_end.totals.prediction``,
which scoring reads.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pixelbox.contract.wire import ADD_GENERATED, READ_TEXT
from pixelbox.harness.agents.base import Agent, AgentTurn, Message, ToolCall
from pixelbox.harness.agents.messages import image_part, text_part
from pixelbox.harness.episode import (
    EpisodeAborted,
    EpisodeEnd,
    EpisodeOutcome,
    ask_agent,
    redact,
    start_fields,
    trace_call,
)
from pixelbox.harness.episode.budgets import Budget
from pixelbox.harness.episode.codemode import extract_answer
from pixelbox.harness.episode.imagebook import ImageBook, ImageEntry
from pixelbox.harness.episode.observations import tool_observation
from pixelbox.harness.suites import EpisodeContext
from pixelbox.harness.suites.agent_x import tools as xt
from pixelbox.harness.suites.agent_x.models import ImageModel, VisionModel
from pixelbox.harness.suites.agent_x.tasks import AgentXTask
from pixelbox.harness.suites.shared import in_sandbox, play_and_end
from pixelbox.harness.tools.atomic import call_tool

STEP_FORMAT = """Each reasoning step is an object with:
- "step": its number,
- "task": the sub-task this step performs,
- "tool_used": the tool you chose for it (and why),
- "tool_output": what the tool returned,
- "thought": what the output means for the answer.
Use tools only when they help, keep each step self-contained, and make your choices transparent.
Finish with "final_answer": {"value": the concise answer, "justification": why it follows from the steps}.

Reply with one JSON object and nothing else, for example:
{"query": "How many cups are on the table?",
 "reasoning_steps": [
   {"step": 1, "task": "Count the cups on the table.", "tool_used": "ObjectCounter",
    "tool_output": "3", "thought": "The counter finds three cups."}
 ],
 "final_answer": {"value": "3", "justification": "ObjectCounter found three cups on the table."}}"""

OFFICIAL_SYSTEM = """You are a multimodal agent. You get a text query, an image or a video (as frames), and \
tools described by this metadata:
{meta}

Answer the query from the visual content by picking and using the most suitable tools, step by step.
{steps}"""

EXECUTED_SYSTEM = """You are a multimodal agent. You get a text query and an image or a video (as frames). \
Answer it by calling the tools step by step; they really run and return real results. Images are numbered: \
1 is the first image or frame, and images that tools produce take the next numbers. Before each tool call, say \
in one sentence what the step is for; after it, say what the result means.
When done, reply without a tool call with one JSON object: \
{"final_answer": {"value": "the concise answer", "justification": "why it follows from the tool results"}}"""


def parse_reply(text: str) -> dict[str, Any] | None:
    """The official parsing: fences stripped, then JSON, then a Python literal; None when neither."""
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip(), flags=re.IGNORECASE)
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(body)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


class AgentXEpisode:
    """One Agent-X task played in one mode with one agent."""

    def __init__(self, task: AgentXTask, agent: Agent, sandbox: Any, context: EpisodeContext) -> None:
        self.task, self.agent, self.sandbox, self.context = task, agent, sandbox, context
        self.writer = context.writer
        self.executed = context.config.mode == "atm"
        self.budget = Budget(context.config.budgets)
        self.book = ImageBook(Path(context.images_dir), list(task.images))
        self.kernel_paths: dict[int, str] = {}
        self.tools = xt.tool_schemas(web=context.web is not None) if self.executed else []
        self.messages: list[Message] = []
        self.steps: list[dict[str, Any]] = []
        self.vision = VisionModel(context, task.task_id)
        self.images = ImageModel(context, task.task_id)
        self.prediction: dict[str, Any] = {"reasoning_steps": "", "final_answer": {"value": "", "justification": ""}}
        """Filled in place when the episode answers (``episode_end`` is written with this very dict)."""

    def run(self) -> EpisodeOutcome:
        self._start()
        loop = self._loop if self.executed else self._single
        return play_and_end(loop, self.writer, self.task.task_id, self.budget, self.book, prediction=self.prediction)

    # -- official: one call -----------------------------------------------------------------------

    def _single(self) -> None:
        self.budget.start_round()
        turn = self._ask()
        parsed = parse_reply(turn.text or "")
        steps = parsed.get("reasoning_steps", "") if parsed else ""
        final = parsed.get("final_answer") if parsed else None
        if not isinstance(final, dict):
            final = {"value": str(final or ""), "justification": ""} if parsed else {"value": "", "justification": ""}
        self.prediction.update(reasoning_steps=steps, final_answer=final, parsed=parsed is not None)
        if parsed is None:
            raise EpisodeEnd("no_answer", "the reply is neither JSON nor a Python literal", "")
        raise EpisodeEnd("answered", None, str(final.get("value") or ""))

    # -- executed: the tool loop --------------------------------------------------------------------

    def _loop(self) -> None:
        pending_thought: dict[str, Any] | None = None
        while True:
            if self.context.should_stop():
                raise EpisodeAborted(f"the run was stopped during task {self.task.task_id}")
            hit = self.budget.start_round()
            if hit is not None:
                self.writer.budget_hit(hit)
                self._predict(None)
                raise EpisodeEnd("budget_exhausted", hit.reason)
            turn = self._ask()
            if pending_thought is not None:
                pending_thought["thought"] = (turn.text or "").strip()
            message = turn.assistant_message()
            if turn.tool_calls:
                message["tool_calls"] = [call.to_message() for call in turn.tool_calls]
            self.messages.append(message)
            if not turn.tool_calls:
                final = self._predict(turn.text or "")
                raise EpisodeEnd("answered", None, str(final.get("value") or ""))
            made: list[ImageEntry] = []
            for number, call in enumerate(turn.tool_calls, start=1):
                step = self._run_call(call, f"r{self.budget.rounds}.{number}", turn.text or "", made)
                pending_thought = step
            if made:
                content: list[dict[str, Any]] = [text_part("Images from the tools:")]
                for entry in made:
                    content += [text_part(f"image {entry.index + 1}:"), image_part(entry.path)]
                self._message({"role": "user", "content": content})

    def _predict(self, text: str | None) -> dict[str, Any]:
        parsed = parse_reply(text) if text else None
        final = parsed.get("final_answer") if parsed else None
        if not isinstance(final, dict):
            answer = extract_answer(text or "") if text else None
            final = {"value": answer if answer is not None else (text or "").strip(), "justification": ""}
        self.prediction.update(reasoning_steps=self.steps, final_answer=final, parsed=parsed is not None)
        return final

    def _run_call(self, call: ToolCall, action_id: str, text: str, made: list[ImageEntry]) -> dict[str, Any]:
        arguments, problem = trace_call(self.writer, self.budget.rounds, action_id, call)
        step: dict[str, Any] = {
            "step": len(self.steps) + 1,
            "task": text.strip(),
            "tool": call.name,
            "input": arguments,
            "output": "",
            "thought": "",
        }
        self.steps.append(step)
        if problem is not None:
            result = _Result(f"Error: {problem}", ok=False)
        elif self.budget.admit_tool_call() is not None:
            result = _Result("Error: the tool-call budget is used up; give your final answer now.", ok=False)
        else:
            result = self._execute(call.name, arguments)
        step["output"], step["ok"] = result.text, result.ok
        made += result.images
        self.writer.observation(
            action_id=action_id,
            execution=result.execution,
            tool_result=result.detail,
            shown=result.text,
            images=[e.to_dict(self.context.run_root) for e in result.images],
            error=None if result.ok else result.text,
            ok=result.ok,
        )
        self._message({"role": "tool", "tool_call_id": call.id, "content": result.text})
        return step

    def _execute(self, name: str, args: dict[str, Any]) -> _Result:
        if name not in xt.SCHEMAS or (name == "WebSearch" and self.context.web is None):
            offered = ", ".join(t["function"]["name"] for t in self.tools)
            return _Result(f"Error: there is no tool named {name!r}; the tools are: {offered}", ok=False)
        if name == "ImageGenerator":
            return self._generate(name, str(args.get("keywords") or ""), None)
        if name == "WebSearch":
            return self._web_search(args)
        if name == "Calculator":
            try:
                code = xt.calculator_code(str(args.get("expression") or ""))
            except ValueError as exc:
                return _Result(f"Error: {exc}", ok=False)
            return self._sandbox(code)
        if name in ("CodePlotter", "Solver"):
            command = args.get("command")
            if not isinstance(command, str) or not command.strip():
                return _Result("Error: command must be non-empty Python code", ok=False)
            return self._sandbox(
                xt.plot_code(command, self._out()) if name == "CodePlotter" else xt.solver_code(command)
            )
        entry, problem = self._image(args.get("image"))
        if entry is None:
            return _Result(f"Error: {problem}", ok=False)
        if name == "OCR":
            return self._ocr(entry)
        if name == "ImageStylization":
            return self._generate(name, str(args.get("instruction") or ""), entry)
        if name == "DrawBoundingBox":
            box = xt.parse_bbox(args.get("bbox"))
            if box is None:
                return _Result("Error: bbox must be '(x1, y1, x2, y2)' in pixels with x2 > x1 and y2 > y1", ok=False)
            return self._sandbox(
                xt.draw_box_code(self._kpath(entry), box, str(args.get("annotation") or ""), self._out())
            )
        if name == "OverlayText":
            xy = xt.text_position(str(args.get("position") or ""), (entry.width or 0, entry.height or 0))
            code = xt.overlay_text_code(
                self._kpath(entry), str(args.get("text") or ""), xy, str(args.get("color") or "red"), self._out()
            )
            return self._sandbox(code)
        return self._perceive(name, entry, args)

    def _perceive(self, name: str, entry: ImageEntry, args: dict[str, Any]) -> _Result:
        target, execution, made = entry, None, []
        if name == "RegionDescriber":
            box = xt.parse_bbox(args.get("bbox"))
            if box is None or not entry.width or not entry.height:
                return _Result("Error: bbox must be '(x1, y1, x2, y2)' in pixels with x2 > x1 and y2 > y1", ok=False)
            w, h = entry.width, entry.height
            bbox_2d = [box[0] * 1000 / w, box[1] * 1000 / h, box[2] * 1000 / w, box[3] * 1000 / h]
            call = {"image_index": entry.index, "bbox_2d": bbox_2d, "label": "RegionDescriber"}
            execution = call_tool(self.sandbox, "crop", json.dumps(call), timeout=self.budget.execution_timeout())
            self.budget.note_execution(execution.status)
            made = self._ingest(execution, "tool:RegionDescriber")
            if execution.status != "ok" or not made:
                return _Result(tool_observation(execution), ok=False, execution=execution)
            target = made[-1]
        values = {
            "text": args.get("text") or "",
            "attribute": args.get("attribute") or "appearance",
            "width": entry.width,
            "height": entry.height,
            "top1": " (only the best match)" if args.get("top1", True) else "",
        }
        prompt = xt.VISION_PROMPTS[name].format(**values)
        answer = self.vision.ask(name, prompt, target.path)
        text = answer.text if answer.ok else f"Error: {answer.text}"
        return _Result(text, ok=answer.ok, execution=execution, detail=answer.detail, images=[])

    def _ocr(self, entry: ImageEntry) -> _Result:
        """tesseract in the sandbox (the kernel's trusted OCR tool): words with boxes, an ``ocr`` event."""
        call = json.dumps({"image_index": entry.index})
        execution = call_tool(self.sandbox, READ_TEXT, call, timeout=self.budget.execution_timeout())
        self.budget.note_execution(execution.status)
        if execution.status != "ok":
            return _Result(tool_observation(execution), ok=False, execution=execution)
        return _Result(execution.stdout.strip(), ok=True, execution=execution, detail={"engine": "tesseract"})

    def _generate(self, name: str, prompt: str, source: ImageEntry | None) -> _Result:
        """An image from the images endpoint, taken into the sandbox as the next image (a ``generate`` event)."""
        if not prompt.strip():
            what = "keywords" if source is None else "instruction"
            return _Result(f"Error: {what} must be a non-empty description", ok=False)
        answer = self.images.make(name, prompt, source.path if source is not None else None)
        if not answer.ok or answer.image is None:
            return _Result(f"Error: {answer.text}", ok=False, detail=answer.detail)
        digest = hashlib.sha256(answer.image).hexdigest()[:16]
        kernel_path = self.sandbox.upload(answer.image, f"generated/{digest}-{len(self.book.entries)}.img")
        call: dict[str, Any] = {"path": kernel_path, "tool": name, "model": self.images.model, "prompt": prompt}
        if source is not None:
            call["source_index"] = source.index
        execution = call_tool(self.sandbox, ADD_GENERATED, json.dumps(call), timeout=self.budget.execution_timeout())
        self.budget.note_execution(execution.status)
        made = self._ingest(execution, f"tool:{name}")
        if execution.status != "ok" or not made:
            return _Result(tool_observation(execution), ok=False, execution=execution, detail=answer.detail)
        text = ", ".join(f"new image {e.index + 1} ({e.width}x{e.height})" for e in made)
        return _Result(text, ok=True, execution=execution, detail=answer.detail, images=made)

    def _web_search(self, args: dict[str, Any]) -> _Result:
        assert self.context.web is not None
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return _Result("Error: query must be a non-empty string", ok=False)
        k = args.get("k") if isinstance(args.get("k"), int) and args["k"] > 0 else 10
        result = self.context.web.google_search(query.strip())
        if not result.ok or result.data is None:
            return _Result(f"Error: {result.error}", ok=False, detail=result.to_dict())
        hits = list(result.data.get("results") or [])[:k]
        lines = [f"{n}. {h.get('title')} ({h.get('link')}): {h.get('snippet')}" for n, h in enumerate(hits, 1)]
        return _Result("\n".join(lines) or "no results", ok=True, detail=result.to_dict())

    def _sandbox(self, code: str) -> _Result:
        execution = self.sandbox.execute(code, timeout=self.budget.execution_timeout())
        self.budget.note_execution(execution.status)
        made = self._ingest(execution, "code")
        text = tool_observation(execution) if execution.status != "ok" else (execution.stdout.strip() or "done")
        if made:
            text += "\n" + ", ".join(f"new image {e.index + 1} ({e.width}x{e.height})" for e in made)
        return _Result(text, ok=execution.status == "ok", execution=execution, images=made, detail={"code": code})

    def _ingest(self, execution: Any, origin: str) -> list[ImageEntry]:
        for record in execution.artifacts:
            self.kernel_paths[int(record["index"])] = str(record.get("kernel_path") or record.get("path") or "")
        return self.book.ingest(self.sandbox, execution.artifacts, origin, execution=execution)

    def _image(self, number: Any) -> tuple[ImageEntry | None, str]:
        if isinstance(number, str) and number.strip().isdigit():
            number = int(number.strip())
        if isinstance(number, int) and not isinstance(number, bool):
            entry = self.book.get(number - 1)
            if entry is not None:
                return entry, ""
        return None, f"image must be an image number from 1 to {len(self.book.entries)}, got {number!r}"

    def _kpath(self, entry: ImageEntry) -> str:
        """Where the image is inside the sandbox (inputs by their workspace name, artifacts by their kernel path)."""
        if entry.index in self.kernel_paths:
            return self.kernel_paths[entry.index]
        return str(self.sandbox.inputs[entry.index])

    def _out(self) -> str:
        return f"agentx_image_{len(self.book.entries) + 1}.png"

    # -- plumbing -----------------------------------------------------------------------------------

    def _ask(self) -> AgentTurn:
        return ask_agent(self.agent, self.messages, self.tools, self.writer, self.budget.rounds)

    def _message(self, message: Message) -> None:
        self.messages.append(message)
        self.writer.write("message", round=self.budget.rounds, message=redact(message))

    def _start(self) -> None:
        task = self.task
        if self.executed:
            system = self.context.config.templates.system or EXECUTED_SYSTEM
        else:
            meta = json.dumps(task.toolmeta or {n: {"name": n, **s["function"]} for n, s in xt.SCHEMAS.items()})
            system = self.context.config.templates.system or OFFICIAL_SYSTEM.format(meta=meta, steps=STEP_FORMAT)
        images = [image_part(p) for p in task.images]
        query = text_part(f"Query: {task.query}")
        content = [*images, query] if len(images) == 1 and not task.video else [query, *images]
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": content}]
        config = self.context.config
        self.writer.write(
            "episode_start",
            **start_fields(task, self.agent, self.sandbox, config),
            agentx_mode="executed" if self.executed else "official",
            suite="agent-x",
            vision=self.vision.describe(),
            images_endpoint=self.images.describe(),
            tools=[t["function"]["name"] for t in self.tools],
            messages=[redact(m) for m in self.messages],
            images=[e.to_dict(self.context.run_root) for e in self.book.entries.values()],
        )


class _Result:
    """What one tool call gave: the text the model sees, success, and what is traced with it."""

    def __init__(
        self,
        text: str,
        *,
        ok: bool,
        execution: Any = None,
        detail: Any = None,
        images: list[ImageEntry] | None = None,
    ) -> None:
        self.text, self.ok, self.execution, self.detail, self.images = text, ok, execution, detail, images or []


def run_agentx_episode(task: AgentXTask, agent: Agent, context: EpisodeContext) -> EpisodeOutcome:
    """Start the task's sandbox, play the episode, always close the sandbox."""
    return in_sandbox(task, agent, context, lambda sandbox: AgentXEpisode(task, agent, sandbox, context).run())
