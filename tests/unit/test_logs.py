"""Log lines as text or as one JSON object each (bot.logs): the update and the PO a task works
on ride along as fields, set by the task, never passed by hand."""

from __future__ import annotations

import asyncio
import io
import json
import logging

from bot import logs


def logger_to(stream: io.StringIO, formatter: logging.Formatter) -> logging.Logger:
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(logs.Fields())
    logger = logging.getLogger(f"test.logs.{id(stream)}")
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.INFO)
    return logger


def test_one_json_object_a_line_with_the_update_and_the_po():
    stream = io.StringIO()
    logger = logger_to(stream, logs.json_formatter())

    async def a_tap() -> None:
        logs.handling(8841)
        logger.info("tap answered")
        logs.about(po_number="PO-2026-0042", job_id="3f1c")
        logger.warning("card %s not edited", "card:PO-2026-0042:v1:2001")

    asyncio.run(a_tap())
    logger.info("outside any task")  # what a task set stays in that task
    first, second, third = (json.loads(line) for line in stream.getvalue().splitlines())
    assert (first["level"], first["message"], first["update_id"], first["po_number"]) == (
        "INFO",
        "tap answered",
        8841,
        None,
    )
    assert (second["po_number"], second["job_id"], second["update_id"]) == (
        "PO-2026-0042",
        "3f1c",
        8841,
    )
    assert second["message"] == "card card:PO-2026-0042:v1:2001 not edited"
    assert second["logger"] == logger.name and "time" in second
    assert (third["update_id"], third["po_number"]) == (None, None)


def test_text_lines_stay_as_they_were():
    stream = io.StringIO()
    logger = logger_to(stream, logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.info("sent %s", "send-po:PO-1:v1:abc")
    assert stream.getvalue() == f"INFO {logger.name}: sent send-po:PO-1:v1:abc\n"
