"""What a cubin says of its kernels' resources, read from its bytes: no device and no ptxas needed, so the numbers
are those of the assembler the compile ran (nvJitLink in the tests, as on a GPU machine).

A cubin for sm_90 is an ELF64 file. Its ``.nv.info`` section holds attributes of the functions, each naming one by
its index in ``.symtab``; two of them are read here: ``EIATTR_REGCOUNT`` (0x2f), the registers a thread, and
``EIATTR_FRAME_SIZE`` (0x11), the bytes of a thread's stack frame, where spilled registers go (kernels without local
arrays have none unless they spill).
"""

import struct

__all__ = ["cubin_resources"]

REGCOUNT, FRAME_SIZE = 0x2F, 0x11
_SVAL = 0x04  # an attribute whose value is a sized block: (symbol index, value) for these two


def _sections(data):
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = heads[shstrndx][4]
    return {_cstr(data, names + h[0]): h for h in heads}


def _cstr(data, at):
    return data[at:data.index(b"\0", at)].decode()


def _symbols(data, sections):
    symtab, strtab = sections[".symtab"], sections[".strtab"]
    count = symtab[5] // 24  # Elf64_Sym: name u32, info u8, other u8, shndx u16, value u64, size u64
    return [_cstr(data, strtab[4] + struct.unpack_from("<I", data, symtab[4] + 24 * i)[0]) for i in range(count)]


def cubin_resources(cubin):
    """``{function name: (registers a thread, stack frame bytes)}`` of every function ``cubin`` describes (registers
    ``None`` for a function without its own count: one the assembler inlined into its callers' frames)."""
    data = bytes(cubin)
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not an ELF64 cubin")
    sections = _sections(data)
    symbols = _symbols(data, sections)
    found = {}
    info = sections[".nv.info"]
    p, end = info[4], info[4] + info[5]
    while p < end:
        fmt, attr = data[p], data[p + 1]
        if fmt == _SVAL:
            size = struct.unpack_from("<H", data, p + 2)[0]
            if attr in (REGCOUNT, FRAME_SIZE):
                index, value = struct.unpack_from("<II", data, p + 4)
                found.setdefault(symbols[index], {})[attr] = value
            p += 4 + size
        elif fmt in (0x01, 0x02, 0x03):  # no value (0x01), a small one (0x02, 0x03)
            p += 2 if fmt == 0x01 else 4
        else:
            raise ValueError(f"an .nv.info attribute of an unknown format {fmt:#x} at byte {p}")
    return {name: (v.get(REGCOUNT), v.get(FRAME_SIZE, 0)) for name, v in found.items()}
