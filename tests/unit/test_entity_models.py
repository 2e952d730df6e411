"""Which service answers a search when some entities are served by another model (search/entity_models.py)."""

from edgeindex.search.entity_models import EntityModels

E5 = "intfloat/multilingual-e5-small"
BGE = "BAAI/bge-small"


def test_entities_all_of_one_other_model_are_answered_by_its_service():
    e5_service = object()
    serving = EntityModels({"acme": E5, "globex": E5}, {E5: e5_service})
    assert serving.service_for(["acme"]) is e5_service
    assert serving.service_for(["acme", "globex"]) is e5_service


def test_a_scope_with_an_entity_of_the_deployments_model_or_of_two_models_goes_to_the_deployment():
    serving = EntityModels({"acme": E5, "initech": BGE}, {E5: object(), BGE: object()})
    assert serving.service_for(["acme", "umbrella"]) is None    # umbrella: the deployment's model
    assert serving.service_for(["umbrella", "acme"]) is None
    assert serving.service_for(["acme", "initech"]) is None     # two other models: never mixed
    assert serving.service_for([]) is None


def test_an_entity_whose_model_this_worker_has_not_loaded_goes_to_the_deployment():
    assert EntityModels({"acme": E5}, {}).service_for(["acme"]) is None
