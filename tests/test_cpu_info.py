"""trainer.cpu_info: the CPU model and bf16 support read from /proc/cpuinfo text, with fallbacks where there is none."""

from trainer.cpu_info import cpu_has_bf16, cpu_model, read_cpuinfo

X86 = "processor\t: 0\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu avx2 avx512f avx512_bf16\n\nprocessor\t: 1\n"


def test_bf16_flags_of_x86_and_arm_count_and_others_do_not():
    for flags, native in (("fpu avx2 avx512f", False), ("fpu avx512f avx512_bf16", True), ("fp asimd bf16 i8mm", True),
                          ("fpu amx_bf16 amx_tile", True), ("fpu avx512_bf16x", False)):
        assert cpu_has_bf16(f"processor\t: 0\nflags\t\t: {flags}\n") is native, flags
    assert cpu_has_bf16("") is False


def test_cpu_model_is_the_first_model_name_else_a_platform_fallback():
    assert cpu_model(X86) == "AMD EPYC 9R14"
    assert cpu_model("processor\t: 0\n")          # no model name line: platform's answer, never empty on Linux


def test_no_cpuinfo_file_reads_as_empty(tmp_path):
    assert read_cpuinfo(tmp_path / "missing") == ""
    (tmp_path / "cpuinfo").write_text(X86)
    assert cpu_model(read_cpuinfo(tmp_path / "cpuinfo")) == "AMD EPYC 9R14"
