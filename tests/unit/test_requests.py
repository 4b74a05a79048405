"""A request without a spreadsheet reads as a sheet: line n is row n, same checks and digest."""

from datetime import date

from core.drafting.sheets import read_items
from core.problems import Place, ProblemCode
from core.purchasing.requests import RequestLine, Source, as_lines, request_digest, request_sheet


def test_lines_read_as_rows_numbered_by_line() -> None:
    lines = [
        RequestLine("CBL-USBC-1M", 40, note="for Friday", needed_by=date(2026, 12, 11)),
        RequestLine("CHG-65W-GAN", 10, ship_to="liberty"),
    ]
    items, problems = read_items(request_sheet(Source.TYPED, "r1", lines).table)
    assert problems == []
    assert [(i.row, i.sku, i.quantity) for i in items] == [
        (1, "CBL-USBC-1M", 40),
        (2, "CHG-65W-GAN", 10),
    ]
    assert items[0].note == "for Friday" and items[0].needed_by == date(2026, 12, 11)
    assert items[1].ship_to == "liberty" and items[1].needed_by is None


def test_problems_are_counted_by_line() -> None:
    sheet = request_sheet(Source.CATALOGUE, "r1", [RequestLine("A-1", 1), RequestLine("A-2", 0)])
    _, problems = read_items(sheet.table)
    [problem] = as_lines(problems)
    assert (problem.row, problem.code, problem.place) == (2, ProblemCode.BELOW_ONE, Place.LINE)
    assert sheet.name == "catalogue request"


def test_the_digest_names_one_request() -> None:
    lines = [RequestLine("A-1", 1)]
    assert request_digest("r1", lines) == request_sheet(Source.TYPED, "r1", lines).sha256
    assert request_digest("r1", lines) != request_digest("r2", lines)
    assert request_digest("r1", lines) != request_digest("r1", [RequestLine("A-1", 2)])
