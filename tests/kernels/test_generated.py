from diamondlab import caches
from diamondlab.kernels import generated


def test_kernels_go_to_a_folder_of_the_generator_and_software_versions(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    folder = generated.cache_dir()
    assert folder.parent == tmp_path / caches.KERNELS and folder.is_dir()
    assert folder.name.startswith(f"g{generated.GENERATOR_VERSION}-")
    monkeypatch.setattr(generated, "GENERATOR_VERSION", generated.GENERATOR_VERSION + 1)
    newer_generator = generated.cache_dir()
    versions = caches.software_versions()
    monkeypatch.setattr(caches, "software_versions", lambda: {**versions, "numba": "0.0.1"})
    older_numba = generated.cache_dir()
    assert len({folder, newer_generator, older_numba}) == 3


def test_the_folder_does_not_depend_on_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    folder = generated.cache_dir()
    cpu = caches.cpu_description()
    monkeypatch.setattr(caches, "cpu_description", lambda: {**cpu, "model": "another CPU"})
    assert generated.cache_dir() == folder  # Numba's own index tells compiled code of CPUs apart


def test_load_generated_writes_once_and_imports(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAMONDLAB_CACHE", str(tmp_path))
    source = '"""A generated module."""\nANSWER = 42\n'
    module = generated.load_generated(source, "diamondlab_test")
    assert module.ANSWER == 42 and module.__name__.startswith("diamondlab_test_")
    (path,) = generated.cache_dir().glob("diamondlab_test_*.py")
    assert path.read_text() == source
    stamp = path.stat().st_mtime_ns
    assert generated.load_generated(source, "diamondlab_test").ANSWER == 42
    assert path.stat().st_mtime_ns == stamp  # the same text is not written again
    path.write_text("ANSWER = 0\n")  # a damaged file is replaced
    assert generated.load_generated(source, "diamondlab_test").ANSWER == 42

