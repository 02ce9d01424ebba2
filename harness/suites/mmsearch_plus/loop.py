"""The MMSearch-Plus episode: a search agent as the paper describes it, on pixelbox's sandbox and traces.

The first user turn shows every image of the question (in Set-of-Mark mode each image twice: as
it is, and with its numbered regions drawn; the marks are also listed with their image), then the
question. Each model turn may call tools; every call gets a ``tool`` reply, and images a tool made
(``zoom_in``) follow in one user message. A reply without tool calls ends the episode: its
``<answer>`` is the answer (else the whole reply). Round caps of the paper: 20 search rounds in the
full rollout (each ``text_search`` or ``image_search`` call is one round), 20 tool calls with
Set-of-Mark. When the cap is reached the model is told so and asked to answer with no tools.

``zoom_in(index)`` and ``image_search(index)`` cut the marked region out in the sandbox through the
canonical ``crop`` (``bbox_2d`` exact to the mark's pixel box), so each is a recorded operation with
its region and lineage like any other; ``image_search`` then searches the crop's bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pixelbox.harness.agents.base import Agent, AgentError, AgentTurn, Message, ToolCall
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
from pixelbox.harness.suites.mmsearch_plus import som as marks_mod
from pixelbox.harness.suites.mmsearch_plus import tools as mt
from pixelbox.harness.suites.mmsearch_plus.tasks import SearchTask
from pixelbox.harness.suites.shared import in_sandbox, play_and_end
from pixelbox.harness.tools.atomic import call_tool
from pixelbox.harness.web import ProviderError

ROUND_CAP = 20
"""Search rounds (full rollout) or tool calls (Set-of-Mark), as in the paper."""
ZOOM_TARGET = 448
"""A zoomed region is enlarged so its longer side reaches about this many pixels (at most 5x)."""

SYSTEM_PROMPT = """You answer hard questions about images by searching the web.

{tools}
Work step by step: look at the images, decide what you need to find out, search, read what comes back, \
and refine your searches. You have at most {cap} {unit}. When you are sure, reply without calling a tool \
and put the final answer, short and exact, between <answer> and </answer>."""
FULL_TOOLS = """Tools:
- text_search(queries): one search round with 1-5 queries; each query's top pages come back summarised.
- image_search(image): reverse image search of image N; its top results come back summarised."""
SOM_TOOLS = """Each image is shown as it is and with numbered regions marked on it. Tools:
- zoom_in(index): see marked region `index` enlarged.
- image_search(index): reverse image search of marked region `index`; its top results come back summarised.
- text_search(queries): one search round with 1-5 queries; each query's top pages come back summarised."""
NO_SEARCH_PROMPT = (
    "Answer the question about the images from what you see and know. "
    "Put the final answer between <answer> and </answer>."
)
CAP_REACHED = (
    "Error: the limit of {cap} {unit} is reached; no more tools. Reply now with your final answer between "
    "<answer> and </answer>."
)


class SearchEpisode:
    """One MMSearch-Plus task played with one agent in one started sandbox."""

    def __init__(self, task: SearchTask, agent: Agent, sandbox: Any, context: EpisodeContext, *, som: bool) -> None:
        self.task, self.agent, self.sandbox, self.context, self.som = task, agent, sandbox, context, som
        self.writer = context.writer
        self.budget = Budget(context.config.budgets)
        self.book = ImageBook(Path(context.images_dir), list(task.images))
        self.marks: list[marks_mod.Mark] = marks_mod.marks_for(task.images, task.som_boxes) if som else []
        self.tools = mt.tool_schemas(som=som, web=context.web is not None)
        self.unit = "tool calls" if som else "search rounds"
        self.messages: list[Message] = []
        self.closed = False
        self.summaries: list[dict[str, Any]] = []
        self.summariser = mt.Summarise(self._summarise, mt.images_context(task.images))

    def run(self) -> EpisodeOutcome:
        self._start()
        return play_and_end(self._loop, self.writer, self.task.task_id, self.budget, self.book)

    def _loop(self) -> None:
        while True:
            if self.context.should_stop():
                raise EpisodeAborted(f"the run was stopped during task {self.task.task_id}")
            hit = self.budget.start_round()
            if hit is not None:
                self.writer.budget_hit(hit)
                raise EpisodeEnd("budget_exhausted", hit.reason)
            turn = self._ask()
            message = turn.assistant_message()
            if turn.tool_calls:
                message["tool_calls"] = [call.to_message() for call in turn.tool_calls]
            self.messages.append(message)
            if not turn.tool_calls:
                answer = extract_answer(turn.text or "")
                raise EpisodeEnd("answered", None, answer if answer is not None else (turn.text or "").strip())
            if self.closed:
                raise EpisodeEnd("budget_exhausted", f"budget exhausted: tools called after the {self.unit} cap")
            shown: list[ImageEntry] = []
            for number, call in enumerate(turn.tool_calls, start=1):
                shown += self._run_call(call, f"r{self.budget.rounds}.{number}")
            if shown:
                self._send_images(shown)

    def _ask(self) -> AgentTurn:
        return ask_agent(self.agent, self.messages, [] if self.closed else self.tools, self.writer, self.budget.rounds)

    # -- one call ---------------------------------------------------------------------------------

    def _run_call(self, call: ToolCall, action_id: str) -> list[ImageEntry]:
        arguments, problem = trace_call(self.writer, self.budget.rounds, action_id, call)
        if problem is not None:
            return self._reply(call, action_id, f"Error: {problem}", error=problem)
        offered = {t["function"]["name"] for t in self.tools}
        if call.name not in offered or self.closed:
            text = f"Error: there is no tool named {call.name!r}; the tools are: {', '.join(sorted(offered)) or 'none'}"
            return self._reply(call, action_id, text, error=text[7:])
        hit = self.budget.admit_tool_call()
        if hit is not None:
            self.writer.budget_hit(hit)
            self.closed = True
            text = CAP_REACHED.format(cap=ROUND_CAP, unit=self.unit)
            return self._reply(call, action_id, text, error="cap reached")
        if call.name == mt.TEXT_SEARCH:
            return self._text_search(call, action_id, arguments)
        if call.name == mt.IMAGE_SEARCH:
            return self._image_search(call, action_id, arguments)
        return self._zoom(call, action_id, arguments)

    def _text_search(self, call: ToolCall, action_id: str, arguments: dict[str, Any]) -> list[ImageEntry]:
        assert self.context.web is not None
        text, records, error = mt.text_search(
            self.context.web, arguments.get("queries"), self.task.question, self.summariser
        )
        return self._reply(call, action_id, text, tool_result={"queries": records}, error=error)

    def _image_search(self, call: ToolCall, action_id: str, arguments: dict[str, Any]) -> list[ImageEntry]:
        assert self.context.web is not None
        if self.som:
            mark, problem = self._mark(arguments)
            if mark is None:
                return self._reply(call, action_id, f"Error: {problem}", error=problem)
            execution, crop = self._crop(mark, f"image_search({mark.index})", zoom=False)
            if crop is None:
                text = tool_observation(execution)
                return self._reply(call, action_id, text, execution=execution, error=text)
            what = f"region {mark.index} of image {mark.image + 1}"
            text, record = mt.image_search(
                self.context.web, crop.path.read_bytes(), what, self.task.question, self.summariser
            )
            record["mark"] = mark.to_dict()
            return self._reply(call, action_id, text, execution=execution, tool_result=record, made=[crop], show=False)
        number = arguments.get("image")
        if not isinstance(number, int) or not 1 <= number <= len(self.task.images):
            problem = f"image must be an integer from 1 to {len(self.task.images)}, got {number!r}"
            return self._reply(call, action_id, f"Error: {problem}", error=problem)
        data = self.book.read(number - 1) or b""
        text, record = mt.image_search(self.context.web, data, f"image {number}", self.task.question, self.summariser)
        return self._reply(call, action_id, text, tool_result=record)

    def _zoom(self, call: ToolCall, action_id: str, arguments: dict[str, Any]) -> list[ImageEntry]:
        mark, problem = self._mark(arguments)
        if mark is None:
            return self._reply(call, action_id, f"Error: {problem}", error=problem)
        execution, crop = self._crop(mark, f"zoom_in({mark.index})", zoom=True)
        if crop is None:
            text = tool_observation(execution)
            return self._reply(call, action_id, text, execution=execution, error=text)
        text = f"Region {mark.index} of image {mark.image + 1} (box {list(mark.box)}), enlarged: {crop.label()}"
        return self._reply(
            call, action_id, text, execution=execution, tool_result={"mark": mark.to_dict()}, made=[crop]
        )

    def _mark(self, arguments: dict[str, Any]) -> tuple[marks_mod.Mark | None, str]:
        index = arguments.get("index")
        if isinstance(index, int) and not isinstance(index, bool) and 1 <= index <= len(self.marks):
            return self.marks[index - 1], ""
        return None, f"index must be the number of a marked region, 1 to {len(self.marks)}, got {index!r}"

    def _crop(self, mark: marks_mod.Mark, label: str, *, zoom: bool) -> tuple[Any, ImageEntry | None]:
        """Cut the mark out with the canonical crop in the sandbox: the execution and the new image (None on error)."""
        entry = self.book.get(mark.image)
        assert entry is not None and entry.width and entry.height
        x1, y1, x2, y2 = mark.box
        scale = min(5.0, max(1.0, ZOOM_TARGET / max(x2 - x1, y2 - y1))) if zoom else 1.0
        arguments = {
            "image_index": mark.image,
            "bbox_2d": mark.bbox_2d((entry.width, entry.height)),
            "zoom_scale": round(scale, 3),
            "label": label,
        }
        execution = call_tool(self.sandbox, "crop", json.dumps(arguments), timeout=self.budget.execution_timeout())
        self.budget.note_execution(execution.status)
        added = self.book.ingest(self.sandbox, execution.artifacts, f"tool:{label.split('(')[0]}", execution=execution)
        return execution, (added[-1] if added and execution.status == "ok" else None)

    def _summarise(self, prompt: str) -> str:
        content = [*(image_part(p) for p in self.task.images), text_part(prompt)]
        try:
            turn = self.agent.next_turn([{"role": "user", "content": content}], [])
        except AgentError as exc:
            self.summaries.append({"error": str(exc)})
            raise ProviderError(f"the summarising model failed: {exc}") from None
        self.summaries.append(turn.to_dict())
        return turn.text or ""

    def _reply(
        self,
        call: ToolCall,
        action_id: str,
        text: str,
        *,
        execution: Any = None,
        tool_result: Any = None,
        made: list[ImageEntry] | None = None,
        error: str | None = None,
        show: bool = True,
    ) -> list[ImageEntry]:
        made = made or []
        summaries, self.summaries = self.summaries, []
        self.writer.observation(
            action_id=action_id,
            execution=execution,
            tool_result=tool_result,
            shown=text,
            images=[e.to_dict(self.context.run_root) for e in made],
            error=error,
            **({"summary_turns": summaries} if summaries else {}),
        )
        message: Message = {"role": "tool", "tool_call_id": call.id, "content": text}
        self.messages.append(message)
        self.writer.write("message", round=self.budget.rounds, message=redact(message))
        return made if show else []

    def _send_images(self, images: list[ImageEntry]) -> None:
        content: list[dict[str, Any]] = [text_part("Zoomed regions:")]
        for entry in images:
            content += [text_part(f"{entry.label()}:"), image_part(entry.path)]
        message: Message = {"role": "user", "content": content}
        self.messages.append(message)
        self.writer.write("message", round=self.budget.rounds, message=redact(message))

    # -- start ------------------------------------------------------------------------------------

    def _start(self) -> None:
        system = self.context.config.templates.system or SYSTEM_PROMPT.format(
            tools=SOM_TOOLS if self.som else FULL_TOOLS, cap=ROUND_CAP, unit=self.unit
        )
        if not self.tools:
            system = NO_SEARCH_PROMPT
        content: list[dict[str, Any]] = []
        overlays: list[str] = []
        for number, path in enumerate(self.task.images):
            content += [text_part(f"Image {number + 1}:"), image_part(path)]
            if self.som:
                mine = [m for m in self.marks if m.image == number]
                overlay = marks_mod.draw_overlay(
                    path, mine, Path(self.context.images_dir) / f"som_image_{number + 1}.png"
                )
                overlays.append(str(overlay))
                listing = ", ".join(str(m.index) for m in mine) or "none"
                content += [text_part(f"Image {number + 1} with numbered regions ({listing}):"), image_part(overlay)]
        content.append(text_part(f"Question: {self.task.question}"))
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": content}]
        config = self.context.config
        self.writer.write(
            "episode_start",
            **start_fields(self.task, self.agent, self.sandbox, config),
            suite="mmsearch-plus-som" if self.som else "mmsearch-plus",
            set_of_mark={"marks": [m.to_dict() for m in self.marks], "overlays": overlays} if self.som else None,
            tools=[t["function"]["name"] for t in self.tools],
            messages=[redact(m) for m in self.messages],
            images=[e.to_dict(self.context.run_root) for e in self.book.entries.values()],
        )


def run_search_episode(task: SearchTask, agent: Agent, context: EpisodeContext, *, som: bool) -> EpisodeOutcome:
    """Start the task's sandbox, play the episode, always close the sandbox."""
    return in_sandbox(task, agent, context, lambda sandbox: SearchEpisode(task, agent, sandbox, context, som=som).run())
