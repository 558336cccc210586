"""The lab's podman drop-in: written by up, removed by down, never over a file not its own."""

import pytest

from pipeline.lab import podman_conf


def test_the_drop_in_names_runc_and_goes_with_the_lab(tmp_path):
    conf = tmp_path / "containers.conf.d" / "99-container-overhead-lab.conf"
    podman_conf.ensure(conf)
    podman_conf.ensure(conf)  # idempotent
    assert 'runtime = "runc"' in conf.read_text()
    assert podman_conf.leftovers(conf) == [f"file {conf}"]
    podman_conf.remove(conf)
    assert not conf.exists() and not conf.parent.exists()
    assert podman_conf.leftovers(conf) == []


def test_a_foreign_file_is_neither_replaced_nor_removed(tmp_path):
    conf = tmp_path / "99-container-overhead-lab.conf"
    conf.write_text('[engine]\nruntime = "crun"\n')
    with pytest.raises(podman_conf.ForeignFile, match="is not the lab's"):
        podman_conf.ensure(conf)
    podman_conf.remove(conf)
    assert conf.read_text() == '[engine]\nruntime = "crun"\n'
    assert podman_conf.leftovers(conf) == []
