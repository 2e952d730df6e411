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


def test_other_languages_are_cut_at_their_connectors_and_punctuation():
    request = ("Trouve la météo à Paris pour samedi, et puis réserve un hôtel près du Louvre. "
               "Convertis 500 dollars en euros.")
    assert texts(request) == ["Trouve la météo à Paris pour samedi", "réserve un hôtel près du Louvre.",
                              "Convertis 500 dollars en euros."]
    assert texts("Finde das Wetter in Berlin für morgen und dann buche ein Hotel am Bahnhof") == [
        "Finde das Wetter in Berlin für morgen", "buche ein Hotel am Bahnhof"]
    assert texts("Busca el clima de Madrid para mañana y luego reserva un hotel cerca del centro") == [
        "Busca el clima de Madrid para mañana", "reserva un hotel cerca del centro"]


def test_unspaced_scripts_are_cut_at_their_connectors():
    # "Check Beijing's weather tomorrow, then book a hotel near the station": no space, no punctuation
    spans = texts("查询北京明天的天气然后预订火车站附近的酒店", min_terms=2)
    assert spans == ["查询北京明天的天气", "预订火车站附近的酒店"]


def test_an_inline_numbered_list_is_a_list_of_tasks():
    assert texts("1) find the weather in Paris tomorrow 2) book a hotel near the station "
                 "3) convert 300 dollars to euros") == [
        "find the weather in Paris tomorrow", "book a hotel near the station", "convert 300 dollars to euros"]
    # a number inside a task is not a list item
    assert texts("Find the 2 best rated hotels in Rome near the Colosseum for 3 nights") == []
