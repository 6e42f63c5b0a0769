"""Google's Python client for Compute Engine (`google-cloud-compute`, REST: its only transport) against the
emulator's compute/v1 subset: zones, TPU machine types, a TPU7x VM through insert → operation → RUNNING →
setMetadata → stop/start → delete, a 2-VM tpu7x-16 slice (workload policy, instance template, MIG), and a
Google-style 404. The client is Google's code; what it accepts is what a real Compute Engine answer looks like."""

from __future__ import annotations

import time

import pytest
from google.api_core import exceptions
from google.cloud import compute_v1

from compute_helpers import client_opts, wait_operation
from tpw_emulator import Emulator


@pytest.fixture(scope="module")
def region(emulator: Emulator) -> str:
    return emulator.zone.rsplit("-", 1)[0]


def test_zones_and_tpu_machine_types(emulator: Emulator) -> None:
    zones = [z.name for z in compute_v1.ZonesClient(**client_opts(emulator)).list(project=emulator.project)]
    assert emulator.zone in zones
    machine_types = compute_v1.MachineTypesClient(**client_opts(emulator))
    types = [m.name for m in machine_types.list(project=emulator.project, zone=emulator.zone)]
    assert {"tpu7x-standard-4t", "ct6e-standard-8t", "ct5p-hightpu-4t", "ct5lp-hightpu-1t"} <= set(types)


def test_tpu7x_vm_lifecycle(emulator: Emulator) -> None:
    instances = compute_v1.InstancesClient(**client_opts(emulator))
    p, z = emulator.project, emulator.zone
    vm = compute_v1.Instance(
        name="py-iron",
        machine_type=f"zones/{z}/machineTypes/tpu7x-standard-4t",
        scheduling=compute_v1.Scheduling(provisioning_model="SPOT", instance_termination_action="STOP"),
    )
    wait_operation(emulator, instances.insert(project=p, zone=z, instance_resource=vm))
    got = instances.get(project=p, zone=z, instance="py-iron")
    assert got.status == "RUNNING"
    assert got.machine_type.endswith("/machineTypes/tpu7x-standard-4t")
    assert got.scheduling.provisioning_model == "SPOT"
    assert got.network_interfaces[0].network_i_p.startswith("127.")
    assert "py-iron" in [i.name for i in instances.list(project=p, zone=z)]

    md = compute_v1.Metadata(fingerprint=got.metadata.fingerprint,
                             items=[compute_v1.Items(key="ssh-keys", value="me:ssh-ed25519 AAAA me")])
    wait_operation(emulator, instances.set_metadata(project=p, zone=z, instance="py-iron", metadata_resource=md))
    items = instances.get(project=p, zone=z, instance="py-iron").metadata.items
    assert {i.key: i.value for i in items}["ssh-keys"] == "me:ssh-ed25519 AAAA me"
    # A stale fingerprint is refused, as Compute Engine refuses it (412).
    with pytest.raises(exceptions.PreconditionFailed):
        instances.set_metadata(project=p, zone=z, instance="py-iron", metadata_resource=md)

    wait_operation(emulator, instances.stop(project=p, zone=z, instance="py-iron"))
    assert instances.get(project=p, zone=z, instance="py-iron").status == "TERMINATED"
    wait_operation(emulator, instances.start(project=p, zone=z, instance="py-iron"))
    assert instances.get(project=p, zone=z, instance="py-iron").status == "RUNNING"
    wait_operation(emulator, instances.delete(project=p, zone=z, instance="py-iron"))
    with pytest.raises(exceptions.NotFound) as e:
        instances.get(project=p, zone=z, instance="py-iron")
    assert "py-iron" in str(e.value)


def test_two_vm_slice_through_a_mig(emulator: Emulator, region: str) -> None:
    p, z = emulator.project, emulator.zone
    policies = compute_v1.ResourcePoliciesClient(**client_opts(emulator))
    templates = compute_v1.InstanceTemplatesClient(**client_opts(emulator))
    migs = compute_v1.InstanceGroupManagersClient(**client_opts(emulator))
    wp = compute_v1.ResourcePolicy(
        name="py-wp",
        workload_policy=compute_v1.ResourcePolicyWorkloadPolicy(type_="HIGH_THROUGHPUT", accelerator_topology="2x2x2"),
    )
    wait_operation(emulator, policies.insert(project=p, region=region, resource_policy_resource=wp))
    tpl = compute_v1.InstanceTemplate(name="py-tpl",
                                      properties=compute_v1.InstanceProperties(machine_type="tpu7x-standard-4t"))
    wait_operation(emulator, templates.insert(project=p, instance_template_resource=tpl))
    mig = compute_v1.InstanceGroupManager(
        name="py-slice",
        base_instance_name="py-slice",
        target_size=2,
        instance_template=f"projects/{p}/global/instanceTemplates/py-tpl",
        resource_policies=compute_v1.InstanceGroupManagerResourcePolicies(
            workload_policy=f"projects/{p}/regions/{region}/resourcePolicies/py-wp"),
    )
    wait_operation(emulator, migs.insert(project=p, zone=z, instance_group_manager_resource=mig))
    deadline = time.time() + 30
    while True:
        managed = list(migs.list_managed_instances(project=p, zone=z, instance_group_manager="py-slice"))
        if len(managed) == 2 and all(m.instance_status == "RUNNING" for m in managed):
            break
        assert time.time() < deadline, [m.instance_status for m in managed]
        time.sleep(0.1)
    assert migs.get(project=p, zone=z, instance_group_manager="py-slice").target_size == 2
    wait_operation(emulator, migs.delete(project=p, zone=z, instance_group_manager="py-slice"))
    wait_operation(emulator, templates.delete(project=p, instance_template="py-tpl"))
    wait_operation(emulator, policies.delete(project=p, region=region, resource_policy="py-wp"))
    left = compute_v1.InstancesClient(**client_opts(emulator)).list(project=p, zone=z)
    assert [i.name for i in left if i.name.startswith("py-slice")] == []


def test_aggregated_lists_across_zones_with_paging_and_a_filter(emulator: Emulator, region: str) -> None:
    """aggregated_list, what the client libraries (and gcloud) use for a list without a zone: (scope, scoped list)
    pairs over every zone, a NO_RESULTS_ON_PAGE warning where a zone has none, pages followed by the pager."""
    p = emulator.project
    instances = compute_v1.InstancesClient(**client_opts(emulator))
    zones = [z.name for z in compute_v1.ZonesClient(**client_opts(emulator)).list(project=p)]
    other = next(z for z in zones if z != emulator.zone)
    for zone, name in [(emulator.zone, "py-agg-a"), (other, "py-agg-b"), (other, "py-agg-c")]:
        vm = compute_v1.Instance(name=name, machine_type=f"zones/{zone}/machineTypes/tpu7x-standard-4t")
        wait_operation(emulator, instances.insert(project=p, zone=zone, instance_resource=vm))
    try:
        by_scope = {scope: [i.name for i in scoped.instances] for scope, scoped in instances.aggregated_list(project=p)}
        assert set(by_scope) == {f"zones/{z}" for z in zones}
        assert {"py-agg-b", "py-agg-c"} <= set(by_scope[f"zones/{other}"])
        assert "py-agg-a" in by_scope[f"zones/{emulator.zone}"]
        # One instance a page: the pager follows nextPageToken through every zone.
        request = compute_v1.AggregatedListInstancesRequest(project=p, max_results=1, filter='name eq "py-agg-.*"')
        pager = instances.aggregated_list(request=request)
        paged = sorted(i.name for _, scoped in pager for i in scoped.instances)
        assert paged == ["py-agg-a", "py-agg-b", "py-agg-c"]
        nobody = compute_v1.AggregatedListInstancesRequest(project=p, filter="name = nobody")
        empty = next(scoped for _, scoped in instances.aggregated_list(request=nobody))
        assert "NO_RESULTS_ON_PAGE" in str(empty.warning)
        policies = compute_v1.ResourcePoliciesClient(**client_opts(emulator)).aggregated_list(project=p)
        assert f"regions/{region}" in {scope for scope, _ in policies}
        ops = compute_v1.GlobalOperationsClient(**client_opts(emulator)).aggregated_list(
            request=compute_v1.AggregatedListGlobalOperationsRequest(project=p, filter='operationType = "insert"'))
        targets = [o.target_link for _, scoped in ops for o in scoped.operations]
        assert any(t.endswith("/instances/py-agg-c") for t in targets)
    finally:
        for zone, name in [(emulator.zone, "py-agg-a"), (other, "py-agg-b"), (other, "py-agg-c")]:
            wait_operation(emulator, instances.delete(project=p, zone=zone, instance=name))
