"""A stack serving multilingual-e5-small (``EDGEINDEX_AI_MODEL``): Arabic questions that share no word
with any document find their answer through the upload, ingest and search workers, by meaning alone.

With all-MiniLM-L6-v2 (the default) the same questions find one answer of five by vector (its
vocabulary has no Arabic words), and full text has nothing to match: so the test fails on the
default model.
"""

from __future__ import annotations

import re

import pytest

from ..helpers import Client, new_tenant, put_document, running_stack, wait_document

DOCUMENTS = {
    "sahara": "الصحراء الكبرى أكبر صحراء حارة في العالم، وتمتد عبر شمال أفريقيا من المحيط الأطلسي إلى البحر الأحمر.",
    "nile": "نهر النيل أطول نهر في القارة الأفريقية، ويصب في البحر المتوسط بعد أن يعبر مصر والسودان.",
    "coffee": "تُحمّص حبوب البن على نار هادئة ثم تُطحن لتحضير القهوة العربية بالهيل.",
    "football": "فاز المنتخب بكأس البطولة بعد مباراة نهائية انتهت بركلات الترجيح.",
    "vaccine": "يساعد التطعيم الجسم على تكوين مناعة ضد الأمراض المعدية مثل الحصبة.",
}
# each asks for one document in other words: the widest arid sandy region; the length of the waterway
# through Cairo and Khartoum; the hot drink flavoured with cardamom (another word for it); who won the
# decisive game of the league; why children get preventive injections
QUESTIONS = {
    "ما هي أوسع منطقة رملية قاحلة فوق الكوكب؟": "sahara",
    "كم يبلغ طول المجرى المائي الذي يمر بالقاهرة والخرطوم؟": "nile",
    "كيف يُعدّ المشروب الساخن المنكّه بالحبهان؟": "coffee",
    "أيّ فريق انتصر باللقاء الحاسم للدوري؟": "football",
    "لماذا نأخذ الحقن الوقائية للأطفال؟": "vaccine",
}


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text))


@pytest.fixture(scope="module")
def e5_stack(tmp_path_factory):
    with running_stack(tmp_path_factory.mktemp("e5"), workers=["upload", "ingest", "search"],
                       EDGEINDEX_AI_MODEL="multilingual-e5-small") as started:
        yield started


async def test_arabic_questions_with_no_word_in_common_find_their_document(e5_stack):
    vocabulary = set().union(*(_words(text) for text in DOCUMENTS.values()))
    for question in QUESTIONS:
        assert not _words(question) & vocabulary, question  # full text has nothing to go on
    tenant = new_tenant(e5_stack, Client(e5_stack.url("upload"), e5_stack.admin_key), prefix="ar")
    for document_id, text in DOCUMENTS.items():
        put_document(tenant, document_id, text)
    for document_id in DOCUMENTS:
        assert (await wait_document(tenant, document_id, timeout=300))["status"] == "ready"

    found = {}
    for question in QUESTIONS:
        status, answer = tenant.search.post("/search", {"query": question, "entity_ids": [tenant.entity_id],
                                                        "k": 1, "cache": False})
        assert status == 200, answer
        found[question] = answer["results"][0]["document_id"] if answer["results"] else None
    assert found == QUESTIONS
