"""Google's Python client for Cloud TPU (google-cloud-tpu, REST transport) against the local emulator: each
test is a place where the emulator used to answer differently from Cloud TPU (see issue 17, item 5)."""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from google.api_core import exceptions
from google.cloud import tpu_v2
from google.longrunning import operations_pb2

from tpw_emulator import Emulator

# The runtime each generation boots (the project's wizard and CLI recommend these).
RECOMMENDED = {"v4-8": "tpu-ubuntu2204-base", "v5litepod-8": "v2-alpha-tpuv5-lite", "v5p-8": "v2-alpha-tpuv5",
               "v6e-8": "v2-alpha-tpuv6e"}
SLICE = "py-slice"  # v5litepod-16: four workers
QueuedState = tpu_v2.QueuedResourceState.State


def node_name(em: Emulator, node_id: str) -> str:
    return f"{em.parent}/nodes/{node_id}"


@pytest.fixture(scope="module")
def nodes(emulator: Emulator, client: tpu_v2.TpuClient) -> dict[str, tpu_v2.Node]:
    """One single-host node per generation with its recommended runtime, and one multi-host slice."""
    specs = {f"py-{t.split('-')[0]}": (t, v) for t, v in RECOMMENDED.items()}
    specs[SLICE] = ("v5litepod-16", "v2-alpha-tpuv5-lite")

    def create(item: tuple[str, tuple[str, str]]) -> tpu_v2.Node:
        node_id, (accel, runtime) = item
        node = tpu_v2.Node(accelerator_type=accel, runtime_version=runtime)
        op = client.create_node(parent=emulator.parent, node_id=node_id, node=node)
        return op.result(timeout=60)

    with ThreadPoolExecutor(len(specs)) as pool:
        created = list(pool.map(create, specs.items()))
    return {n.name.rsplit("/", 1)[-1]: n for n in created}


def test_nodes_report_accelerator_and_network_config(
    emulator: Emulator, client: tpu_v2.TpuClient, nodes: dict[str, tpu_v2.Node]
) -> None:
    node = client.get_node(name=node_name(emulator, SLICE))
    assert node.accelerator_config.type_ == tpu_v2.AcceleratorConfig.Type.V5LITE_POD
    assert node.accelerator_config.topology == "4x4"
    assert nodes["py-v6e"].accelerator_config.type_ == tpu_v2.AcceleratorConfig.Type.V6E
    assert nodes["py-v4"].accelerator_config.topology == "2x2x1"
    assert node.network_config.network == f"projects/{emulator.project}/global/networks/default"
    assert node.network_config.subnetwork == f"projects/{emulator.project}/regions/us-central2/subnetworks/default"
    assert node.network_config.enable_external_ips is True
    assert all(ep.access_config.external_ip == ep.ip_address for ep in node.network_endpoints)


def test_node_created_by_accelerator_config_without_external_ips(
    emulator: Emulator, client: tpu_v2.TpuClient, nodes: dict[str, tpu_v2.Node]
) -> None:
    spec = tpu_v2.Node(
        accelerator_config=tpu_v2.AcceleratorConfig(type_=tpu_v2.AcceleratorConfig.Type.V6E, topology="2x2"),
        runtime_version="v2-alpha-tpuv6e",
        network_config=tpu_v2.NetworkConfig(network="default", enable_external_ips=False),
    )
    node = client.create_node(parent=emulator.parent, node_id="py-bycfg", node=spec).result(timeout=60)
    try:
        assert node.accelerator_type == "v6e-4"
        assert node.network_config.enable_external_ips is False
        assert all(not ep.access_config.external_ip for ep in node.network_endpoints)
    finally:
        client.delete_node(name=node.name).result(timeout=60)


def test_runtime_version_must_match_the_accelerator_type(emulator: Emulator, client: tpu_v2.TpuClient) -> None:
    with pytest.raises(exceptions.BadRequest) as e:
        client.create_node(parent=emulator.parent, node_id="py-mismatch",
                           node=tpu_v2.Node(accelerator_type="v6e-8", runtime_version="tpu-ubuntu2204-base"))
    message = e.value.message
    assert "tpu-ubuntu2204-base" in message and "v6e-8" in message and "v2-alpha-tpuv6e" in message
    with pytest.raises(exceptions.NotFound):
        client.get_node(name=node_name(emulator, "py-mismatch"))


def test_recommended_runtimes_are_accepted(nodes: dict[str, tpu_v2.Node]) -> None:
    for accel, runtime in RECOMMENDED.items():
        node = next(n for n in nodes.values() if n.accelerator_type == accel)
        assert node.state == tpu_v2.Node.State.READY and node.runtime_version == runtime


def test_stopping_a_multi_host_slice_is_refused(
    emulator: Emulator, client: tpu_v2.TpuClient, nodes: dict[str, tpu_v2.Node]
) -> None:
    with pytest.raises(exceptions.BadRequest) as e:
        client.stop_node(request={"name": node_name(emulator, SLICE)})
    assert e.value.code == 400
    assert "multi-host" in e.value.message
    assert client.get_node(name=node_name(emulator, SLICE)).state == tpu_v2.Node.State.READY


def test_operations_list_with_filter_and_pages(
    emulator: Emulator, client: tpu_v2.TpuClient, nodes: dict[str, tpu_v2.Node]
) -> None:
    seen: list[operations_pb2.Operation] = []
    token = ""
    for _ in range(20):
        page = client.list_operations(operations_pb2.ListOperationsRequest(
            name=emulator.parent, filter='metadata.verb = "create" AND done = true', page_size=2, page_token=token))
        assert len(page.operations) <= 2
        seen.extend(page.operations)
        token = page.next_page_token
        if not token:
            break
    assert not token
    targets = set()
    for op in seen:
        meta = tpu_v2.OperationMetadata.deserialize(op.metadata.value)
        assert op.done and meta.verb == "create"
        targets.add(meta.target)
    assert {node_name(emulator, n) for n in nodes} <= targets
    with pytest.raises(exceptions.BadRequest) as e:
        client.list_operations(operations_pb2.ListOperationsRequest(name=emulator.parent, filter="colour = blue"))
    assert "colour = blue" in e.value.message


def test_cancel_then_delete_an_operation(
    emulator: Emulator, client: tpu_v2.TpuClient, nodes: dict[str, tpu_v2.Node]
) -> None:
    op = client.stop_node(request={"name": node_name(emulator, "py-v4")})
    name = op.operation.name
    client.cancel_operation(operations_pb2.CancelOperationRequest(name=name))
    got = client.get_operation(operations_pb2.GetOperationRequest(name=name))
    assert tpu_v2.OperationMetadata.deserialize(got.metadata.value).cancel_requested is True
    op.result(timeout=60)  # best effort: the emulator's stop runs to the end
    client.delete_operation(operations_pb2.DeleteOperationRequest(name=name))
    with pytest.raises(exceptions.NotFound):
        client.get_operation(operations_pb2.GetOperationRequest(name=name))
    client.start_node(request={"name": node_name(emulator, "py-v4")}).result(timeout=60)


def test_guest_attributes_publish_the_workers_host_key(
    emulator: Emulator, client: tpu_v2.TpuClient, nodes: dict[str, tpu_v2.Node]
) -> None:
    key_type, blob = (emulator.home / "emulator" / "keys" / "ssh_host_ed25519_key.pub").read_text().split()[:2]
    res = client.get_guest_attributes(tpu_v2.GetGuestAttributesRequest(
        name=node_name(emulator, SLICE), query_path="hostkeys/", worker_ids=["1", "3"]))
    assert len(res.guest_attributes) == 2
    for ga in res.guest_attributes:
        assert [(i.namespace, i.key, i.value) for i in ga.query_value.items] == [("hostkeys", key_type, blob)]
    everything = client.get_guest_attributes(tpu_v2.GetGuestAttributesRequest(name=node_name(emulator, SLICE)))
    assert len(everything.guest_attributes) == 4
    with pytest.raises(exceptions.BadRequest):
        client.get_guest_attributes(tpu_v2.GetGuestAttributesRequest(name=node_name(emulator, SLICE), worker_ids=["4"]))


def test_generate_service_identity(emulator: Emulator, client: tpu_v2.TpuClient) -> None:
    first = client.generate_service_identity(tpu_v2.GenerateServiceIdentityRequest(parent=emulator.parent))
    assert re.fullmatch(r"service-\d{12}@cloud-tpu\.iam\.gserviceaccount\.com", first.identity.email)
    again = client.generate_service_identity(tpu_v2.GenerateServiceIdentityRequest(parent=emulator.parent))
    assert again.identity.email == first.identity.email


def _wait_qr(client: tpu_v2.TpuClient, name: str, state: int, timeout: float = 30) -> tpu_v2.QueuedResource:
    """Polls until the queued resource is in `state`, a QueuedState (an int to mypy: proto-plus's enums have no
    type information)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        qr = client.get_queued_resource(name=name)
        if qr.state.state == state:
            return qr
        time.sleep(0.1)
    raise AssertionError(f"{name} did not reach {QueuedState(state).name}: {qr.state}")


def test_reset_a_failed_queued_resource_then_delete_it_as_gcloud_does(
    emulator: Emulator, client: tpu_v2.TpuClient
) -> None:
    fault = {"capacity": [{"zone": emulator.zone, "acceleratorType": "v6e-1"}]}
    status, _, _, _ = emulator.raw("POST", "/emulator/v1/faults", json.dumps(fault).encode())
    assert status == 200
    spec = tpu_v2.QueuedResource.Tpu.NodeSpec(
        parent=emulator.parent,
        node_id="py-qr-node",
        node=tpu_v2.Node(accelerator_type="v6e-1", runtime_version="v2-alpha-tpuv6e"),
    )
    qr = tpu_v2.QueuedResource(
        tpu=tpu_v2.QueuedResource.Tpu(node_spec=[spec]),
        queueing_policy=tpu_v2.QueuedResource.QueueingPolicy(valid_until_duration={"seconds": 2}),
    )
    client.create_queued_resource(parent=emulator.parent, queued_resource_id="py-qr",
                                  queued_resource=qr).result(timeout=30)
    name = f"{emulator.parent}/queuedResources/py-qr"
    failed = _wait_qr(client, name, QueuedState.FAILED)
    assert failed.state.failed_data.error.message
    client.reset_queued_resource(name=name).result(timeout=30)
    with pytest.raises(exceptions.BadRequest) as e:  # queued again: only FAILED or SUSPENDED ones can be reset
        client.reset_queued_resource(name=name)
    assert "FAILED or SUSPENDED" in e.value.message
    emulator.raw("DELETE", "/emulator/v1/faults")
    _wait_qr(client, name, QueuedState.ACTIVE)
    assert client.get_node(name=node_name(emulator, "py-qr-node")).state == tpu_v2.Node.State.READY

    # gcloud's `queued-resources delete --force` sends force=True; a value that is no bool is refused by name.
    path = f"/v2/{name}"
    status, _, body, _ = emulator.raw("DELETE", f"{path}?force=yes")
    assert status == 400 and body["error"]["status"] == "INVALID_ARGUMENT" and "'force'" in body["error"]["message"]
    status, _, body, _ = emulator.raw("DELETE", f"{path}?force=True")
    assert status == 200, body
    op_name = body["name"]
    deadline = time.monotonic() + 30
    while not client.get_operation(operations_pb2.GetOperationRequest(name=op_name)).done:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    with pytest.raises(exceptions.NotFound):
        client.get_queued_resource(name=name)


def test_multislice_queued_resource_makes_prefixed_slices(emulator: Emulator, client: tpu_v2.TpuClient) -> None:
    spec = tpu_v2.QueuedResource.Tpu.NodeSpec(
        parent=emulator.parent,
        multislice_params=tpu_v2.QueuedResource.Tpu.NodeSpec.MultisliceParams(node_count=2, node_id_prefix="py-ms"),
        node=tpu_v2.Node(accelerator_type="v6e-1", runtime_version="v2-alpha-tpuv6e"),
    )
    qr = tpu_v2.QueuedResource(tpu=tpu_v2.QueuedResource.Tpu(node_spec=[spec]),
                               guaranteed=tpu_v2.QueuedResource.Guaranteed())
    client.create_queued_resource(parent=emulator.parent, queued_resource_id="py-ms-qr",
                                  queued_resource=qr).result(timeout=30)
    name = f"{emulator.parent}/queuedResources/py-ms-qr"
    active = _wait_qr(client, name, QueuedState.ACTIVE)
    assert active.tpu.node_spec[0].multislice_params.node_count == 2
    for i in range(2):
        node = client.get_node(name=node_name(emulator, f"py-ms-{i}"))
        assert node.state == tpu_v2.Node.State.READY
        assert node.multislice_node is True
        assert node.queued_resource == name
    # Without a prefix the queued resource's id names the slices; a count of 1 is refused by name.
    one = tpu_v2.QueuedResource.Tpu.NodeSpec(
        parent=emulator.parent,
        multislice_params=tpu_v2.QueuedResource.Tpu.NodeSpec.MultisliceParams(node_count=1),
        node=spec.node,
    )
    one_qr = tpu_v2.QueuedResource(tpu=tpu_v2.QueuedResource.Tpu(node_spec=[one]))
    with pytest.raises(exceptions.BadRequest) as e:
        client.create_queued_resource(parent=emulator.parent, queued_resource_id="py-ms-one", queued_resource=one_qr)
    assert "nodeCount" in e.value.message
    # This client's DeleteQueuedResourceRequest has no `force`; gcloud's REST call sends it as a query parameter.
    status, _, body, _ = emulator.raw("DELETE", f"/v2/{name}?force=true")
    assert status == 200, body
    deadline = time.monotonic() + 30
    while not client.get_operation(operations_pb2.GetOperationRequest(name=body["name"])).done:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    for i in range(2):
        with pytest.raises(exceptions.NotFound):
            client.get_node(name=node_name(emulator, f"py-ms-{i}"))


def test_malformed_percent_escape_is_a_bad_request(emulator: Emulator) -> None:
    status, _, body, _ = emulator.raw("GET", f"/v2/{emulator.parent}/nodes/%zz")
    assert status == 400
    assert body["error"]["status"] == "INVALID_ARGUMENT" and "%zz" in body["error"]["message"]


def test_oversized_body_gets_an_answer_and_a_clean_close(emulator: Emulator, client: tpu_v2.TpuClient) -> None:
    big_body = b"{" + b" " * (3 << 20) + b"}"
    status, headers, body, after = emulator.raw("POST", f"/v2/{emulator.parent}/nodes?nodeId=py-big", big_body)
    assert status == 400
    assert body["error"]["status"] == "INVALID_ARGUMENT" and "exceeds the limit" in body["error"]["message"]
    assert headers.get("connection") == "close" and after == b""
    big_node = tpu_v2.Node(accelerator_type="v4-8", runtime_version="tpu-ubuntu2204-base", description="x" * (3 << 20))
    with pytest.raises(exceptions.BadRequest):
        client.create_node(parent=emulator.parent, node_id="py-big", node=big_node)
