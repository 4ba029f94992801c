#!/usr/bin/env python3
"""Write the seed corpus of the fuzzing targets (make fuzz) into
tests/fuzz/seeds/TARGET/: valid files (as lnkit writes them) and malformed
ones (each breaks one rule the reader checks).  Run it from the repository
root; the seeds are committed, this script says how they were made."""
import base64, json, os, struct, sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


def put(target, name, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def st(tensors, meta=None, pad=True, header=None):
    """A safetensors file: tensors = [(name, dtype, shape, values)]."""
    h, buf = {}, b""
    for name, dt, shape, vals in tensors:
        fmt = "<%d%s" % (len(vals), "d" if dt == "F64" else "q")
        raw = struct.pack(fmt, *vals)
        h[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(buf), len(buf) + len(raw)]}
        buf += raw
    if meta is not None:
        h["__metadata__"] = meta
    text = header if header is not None else json.dumps(h, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + buf


# ---------------------------------------------------------------- safetensors
# the tiny lm model of the fuzz target (d 4, h 2, L 1, V 6, d_ff 4): 184 params
names = [("tgt_emb", [6, 4])]
for p, sh in [("attn.wq", [4, 4]), ("attn.bq", [4]), ("attn.wk", [4, 4]), ("attn.bk", [4]),
              ("attn.wv", [4, 4]), ("attn.bv", [4]), ("attn.wo", [4, 4]), ("attn.bo", [4]),
              ("norm1.g", [4]), ("norm1.b", [4]), ("ffn.w1", [4, 4]), ("ffn.b1", [4]),
              ("ffn.w2", [4, 4]), ("ffn.b2", [4]), ("norm2.g", [4]), ("norm2.b", [4])]:
    names.append(("dec.0." + p, sh))
names.append(("out.w", [6, 4]))


def size(sh):
    n = 1
    for k in sh:
        n *= k
    return n


weights = [(n, "F64", sh, [0.01 * (i % 7) for i in range(size(sh))]) for n, sh in names]
put("safetensors", "weights_lm", st(weights))
put("safetensors", "vector_flat", st([("v", "F64", [184], [0.5] * 184)]))
ids = [2, 4, 5, 4, 3, 0, 2, 5, 4, 4, 5, 3]
put("safetensors", "batch_lm", st([("tgt", "I64", [2, 6], ids)], {"task": "lm"}))
put("safetensors", "batch_s2s", st([("src", "I64", [2, 3], [4, 5, 4, 5, 4, 0]),
                                    ("tgt", "I64", [2, 6], ids)], {"task": "seq2seq"}))
put("safetensors", "batch_cls", st([("src", "I64", [2, 3], [4, 5, 4, 5, 4, 0]),
                                    ("labels", "I64", [2, 3], [1, 2, 0, 3, 1, 0])], {"task": "cls"}))
put("safetensors", "batch_nometa", st([("src", "I64", [1, 2], [4, 5]), ("tgt", "I64", [1, 3], [2, 4, 3])]))
put("safetensors", "empty_tensor", st([("x", "F64", [0, 3], [])]))
put("safetensors", "scalar", st([("s", "F64", [], [1.5])]))
put("safetensors", "nonfinite", st([("v", "F64", [184], [float("nan")] + [0.0] * 183)]))
put("safetensors", "short", b"\x08\x00\x00\x00")
put("safetensors", "hlen_beyond", struct.pack("<Q", 1 << 40) + b"{}")
put("safetensors", "not_json", st([], header=b"{not json"))
put("safetensors", "not_utf8", st([], header=b'{"\xff": 1}'))
put("safetensors", "not_object", st([], header=b"[1, 2]"))
put("safetensors", "dup_names", st([], header=b'{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},'
                                              b'"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}') + b"\0" * 8)
put("safetensors", "bad_dtype", st([], header=b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}') + b"\0" * 8)
put("safetensors", "neg_shape", st([], header=b'{"a":{"dtype":"F64","shape":[-1],"data_offsets":[0,8]}}') + b"\0" * 8)
put("safetensors", "huge_shape", st([], header=b'{"a":{"dtype":"F64","shape":[4294967296,4294967296],'
                                               b'"data_offsets":[0,8]}}') + b"\0" * 8)
put("safetensors", "reversed", st([], header=b'{"a":{"dtype":"F64","shape":[1],"data_offsets":[8,0]}}') + b"\0" * 8)
put("safetensors", "overlap", st([], header=b'{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},'
                                            b'"b":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}}') + b"\0" * 16)
put("safetensors", "gap", st([], header=b'{"a":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}}') + b"\0" * 16)
put("safetensors", "trailing", st([("a", "F64", [1], [1.0])]) + b"\0" * 8)
put("safetensors", "truncated", st(weights)[:-9])
put("safetensors", "bad_meta", st([("a", "F64", [1], [1.0])], {"task": 3}))
put("safetensors", "meta_task_other", st([("tgt", "I64", [1, 3], [2, 4, 3])], {"task": "seq2seq"}))
put("safetensors", "extra_key", st([], header=b'{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8],"x":1}}') + b"\0" * 8)
put("safetensors", "name_ctrl", st([("a\nb\x1b[2J", "F64", [1], [1.0])]))
put("safetensors", "ids_range", st([("tgt", "I64", [1, 4], [2, 99, -1, 3])], {"task": "lm"}))

# -------------------------------------------------------------------- config
lm = {"task": "lm", "norm_pos": "post", "norm": "layernorm", "qk_norm": "none", "d": 4, "h": 2,
      "d_ff": 4, "L": 1, "L_enc": 1, "L_dec": 1, "V": 6, "V_src": 6, "V_tgt": 6, "n_classes": 6,
      "init": "xavier", "seed": 0, "eps": 1e-5, "tie_output": False, "label_smoothing": 0.0,
      "n_params": 184, "param_order": [n for n, _ in names]}
put("config", "saved_lm.json", json.dumps(lm, indent=2))
put("config", "minimal.json", "{}")
put("config", "s2s.json", json.dumps({"task": "seq2seq", "L_enc": 2, "L_dec": 1, "V_src": 9, "V_tgt": 7,
                                       "norm_pos": "pre", "qk_norm": "rmsnorm"}))
put("config", "cls.json", json.dumps({"task": "cls", "n_classes": 3, "tie_output": True, "d": 8, "h": 4}))
put("config", "theorem.json", json.dumps({"init": "theorem", "norm": "rmsnorm", "label_smoothing": 0.1}))
put("config", "trailing_comma.json", '{"d": 4,}')
put("config", "unknown_key.json", '{"d\\n_ff": 4}')
put("config", "wrong_type.json", '{"d": "four", "h": 2.5, "tie_output": "yes"}')
put("config", "dup_key.json", '{"d": 4, "d": 8}')
put("config", "big_number.json", '{"L": 1000000000000000000000, "seed": 18446744073709551616}')
put("config", "escape_value.json", '{"norm": "\\u001b[31mred\\n"}')
put("config", "nested.json", '{"d": {"d": [[[[[[]]]]]]}}')
put("config", "array.json", '[1, 2, 3]')
put("config", "empty.json", "")
put("config", "bad_utf8.json", b'{"norm": "\xc3\x28"}')
put("config", "stale_n_params.json", json.dumps(dict(lm, L=2)))
put("config", "bad_order.json", json.dumps(dict(lm, param_order=["out.w", "tgt_emb"])))
put("config", "odd_d.json", '{"d": 5, "h": 2}')

# ---------------------------------------------------------------------- text
put("text", "plain.txt", "a man rides a horse .\ntwo dogs play in the snow .\n")
put("text", "bom_crlf.txt", "\xef\xbb\xbfein Mann\r\nzwei Hunde\r\n".encode("latin-1"))
put("text", "tabs_specials.txt", "a\tb <unk> <bos>\n<eos> c\n")
put("text", "pad_token.txt", "a <pad> b\n")
put("text", "empty_line.txt", "a b\n\nc\n")
put("text", "blank_line.txt", "a b\n \t \nc\n")
put("text", "no_final_newline.txt", "a b\nc d")
put("text", "nul.txt", b"a b\nc \x00d\n")
put("text", "bad_utf8.txt", b"a \xff b\n")
put("text", "overlong.txt", b"a \xc0\xaf b\n")
put("text", "surrogate.txt", b"a \xed\xa0\x80 b\n")
put("text", "unicode.txt", "caf\u00e9 \u00fcber \u2028 \U0001f600 na\u00efve\n")
put("text", "long_line.txt", " ".join("w%d" % (i % 50) for i in range(3000)) + "\n")
put("text", "empty.txt", "")
put("text", "many_lines.txt", "".join("x%d y\n" % (i % 13) for i in range(500)))

# ---------------------------------------------------------------- vocabulary
put("vocab", "valid.vocab", "<pad>\n<unk>\n<bos>\n<eos>\na\nman\n.\n")
put("vocab", "specials_only.vocab", "<pad>\n<unk>\n<bos>\n<eos>\n")
put("vocab", "crlf.vocab", "<pad>\r\n<unk>\r\n<bos>\r\n<eos>\r\nx\r\n")
put("vocab", "bom.vocab", "\ufeff<pad>\n<unk>\n<bos>\n<eos>\n")
put("vocab", "missing_specials.vocab", "a\nb\n")
put("vocab", "wrong_order.vocab", "<unk>\n<pad>\n<bos>\n<eos>\n")
put("vocab", "duplicate.vocab", "<pad>\n<unk>\n<bos>\n<eos>\na\nb\na\n")
put("vocab", "space.vocab", "<pad>\n<unk>\n<bos>\n<eos>\na b\n")
put("vocab", "empty_line.vocab", "<pad>\n<unk>\n<bos>\n<eos>\n\nz\n")
put("vocab", "nul.vocab", b"<pad>\n<unk>\n<bos>\n<eos>\n\x00\n")
put("vocab", "dup_special.vocab", "<pad>\n<unk>\n<bos>\n<eos>\n<unk>\n")
put("vocab", "short.vocab", "<pad>\n<unk>\n")


# -------------------------------------------------------------------- corpus
def corpus(opt, src, tgt):
    src, tgt = src.encode() if isinstance(src, str) else src, tgt.encode() if isinstance(tgt, str) else tgt
    return struct.pack("<HH", opt, len(src)) + src + tgt


de = "ein mann reitet ein pferd .\nzwei hunde spielen im schnee .\neine frau liest .\n"
en = "a man rides a horse .\ntwo dogs play in the snow .\na woman reads .\n"
put("corpus", "valid", corpus(0, de, en))
put("corpus", "joint_maxlen", corpus(1 | (3 << 3) | (1 << 6) | (1 << 7) | (20 << 8), de, en))
put("corpus", "drop_all", corpus(1 << 3, de, en))
put("corpus", "line_mismatch", corpus(0, de, "one line\n"))
put("corpus", "empty_side", corpus(0, de, ""))
put("corpus", "pad_token", corpus(0, "a <pad>\n", "b\n"))
put("corpus", "bad_utf8", corpus(0, b"a \xfe\n", "b\n"))
put("corpus", "long_pair", corpus(2 << 8, " ".join(["w"] * 300) + "\n", "x\n"))
put("corpus", "specials", corpus(5, "<unk> <eos>\n<bos>\n", "<bos> a\n<eos>\n"))

# ----------------------------------------------------------------------- CSV
put("csv", "eigs.csv", "which,index,eigenvalue,residual,converged\ntop,0,6.11,1.4e-07,1\nbottom,0,-2.5,3e-9,1\n")
put("csv", "quoted.csv", 'a,b\n"x,y","say ""hi"""\n"multi\nline",2\n')
put("csv", "crlf.csv", "a,b\r\n1,2\r\n")
put("csv", "ragged.csv", "a,b\n1\n1,2,3\n")
put("csv", "unterminated.csv", 'a,b\n"open,1\n')
put("csv", "header_only.csv", "a,b,c\n")
put("csv", "empty.csv", "")
put("csv", "trailing_comma.csv", "a,b\n1,")
put("csv", "found_trailing_comma", base64.b64decode("d2hpY2gsaW5kZXgsZWlnZW52YWx1ZSxyZXNpZHVhbCxjb252ZXJnZAp0b3AsMCxb9/82LA=="))
put("csv", "nan.csv", "x\nnan\ninf\n1e999\n-0\n0x10\n")
put("csv", "keys_bom_crlf.csv", "\ufeffa,b\r\n1.5, 2\r\n1e-320,3\r\n\r\n")
put("csv", "keys_plain.csv", "0.1,2\n3,4")
put("csv", "dup_names.csv", "a,b,a\n1,2,3\n")
put("csv", "blank_line.csv", "a,b\n1,2\n\n3,4\n")
put("csv", "one_column.csv", "a\n\n1\n\"\"\n")
put("csv", "nul.csv", b"a,b\n1\x00,2\n")
put("csv", "after_quote.csv", 'a,b\n"x"y,1\n')

# ------------------------------------------------------------------- sidecar
# strings the system gives (paths, arguments), NUL-separated (fuzz_sidecar.c)
put("sidecar", "plain", b"w.safetensors\0eigs\0--quiet\0e.csv")
put("sidecar", "quote", b'w"q.safetensors\0--weights\0w"q.safetensors')
put("sidecar", "backslash", b"a\\b\\\0c:\\x")
put("sidecar", "controls", b"new\nline\ttab\x01\x1b[31m\x7f\0\r")
put("sidecar", "utf8", "caf\u00e9 \u20ac \U0001F600".encode() + b"\0\xe2\x80\xa8")
put("sidecar", "latin1", b"caf\xe9.csv\0\xff\xfe\0\xe9")
put("sidecar", "bad_sequences", b"\xc0\xaf\0\xed\xa0\x80\0\xf4\x90\x80\x80\0\xe2\x82")
put("sidecar", "empty", b"")
put("sidecar", "slashes", b"dir/sub/../x\0/abs/path")
print("seeds written to", root)
