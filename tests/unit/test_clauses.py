"""The clause splitter of tool selection (selection/clauses.py): character spans of a request's tasks."""

from __future__ import annotations

from edgeindex.selection.clauses import clause_spans


def texts(request: str, min_terms: int = 3) -> list[str]:
    return [request[a:b] for a, b in clause_spans(request, min_terms)]


def test_connectors_and_sentence_ends_cut_a_request_into_its_tasks():
    request = ("Find the weather forecast in Paris for Saturday, and then book a hotel room near the Louvre. "
               "Convert 500 US dollars to euros as well as list the top rated museums in the city; "
               "also translate the museum names into German and find vegetarian restaurants nearby")
    assert texts(request) == [
        "Find the weather forecast in Paris for Saturday", "book a hotel room near the Louvre.",
        "Convert 500 US dollars to euros", "list the top rated museums in the city",
        "also translate the museum names into German", "find vegetarian restaurants nearby"]
    for a, b in clause_spans(request, 3):   # spans of the request itself, edges stripped
        assert request[a:b] == request[a:b].strip(" ,\"'")


def test_a_plain_and_inside_a_task_does_not_cut_it():
    # "and" between two nouns is one task; "and" before a task word starts another
    assert texts("Calculate the area and perimeter of a rectangle with sides 4 and 7 meters") == []
    assert texts("Calculate the area of a circle of radius 3 and find the hypotenuse of a 3-4 triangle") == [
        "Calculate the area of a circle of radius 3", "find the hypotenuse of a 3-4 triangle"]


def test_short_clauses_do_not_count_and_one_clause_is_none():
    request = "Get the stock price of Apple, and then round it."
    assert texts(request) == []                 # "round it" has one term: a single clause left
    assert texts(request, min_terms=1) == ["Get the stock price of Apple", "round it."]


def test_other_languages_are_cut_at_punctuation_only():
    request = ("Trouve la météo à Paris pour samedi, et puis réserve un hôtel près du Louvre. "
               "Convertis 500 dollars en euros.")
    assert texts(request) == ["Trouve la météo à Paris pour samedi, et puis réserve un hôtel près du Louvre.",
                              "Convertis 500 dollars en euros."]
