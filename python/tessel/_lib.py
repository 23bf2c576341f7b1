"""Finding libtessel.so and declaring the C API's functions (include/tessel.h) for ctypes.

Where the library is looked for, first match wins:
  1. the TESSEL_LIBRARY environment variable: the path of libtessel.so (an error if it is not a
     loadable file: a setting is never silently ignored);
  2. libtessel.so inside this package's directory (a wheel that bundles it);
  3. the libdir that `pkg-config --variable=libdir tessel` prints (an installed tessel);
  4. ctypes.util.find_library("tessel") (the system's library path).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
from pathlib import Path

LIBRARY_NAME = "libtessel.so"


class LibraryNotFound(OSError):
    """libtessel.so was not found or could not be loaded; the message says where it was looked for."""


def _pkg_config_libdir() -> Path | None:
    if not shutil.which("pkg-config"):
        return None
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "tessel"], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def find_library() -> str:
    """The path (or, from find_library, the name) of the libtessel to load."""
    env = os.environ.get("TESSEL_LIBRARY")
    if env is not None:
        if not env or not Path(env).is_file():
            raise LibraryNotFound(f"TESSEL_LIBRARY={env!r}: expected the path of an existing libtessel.so")
        return env
    tried = []
    here = Path(__file__).resolve().parent / LIBRARY_NAME
    tried.append(str(here))
    if here.is_file():
        return str(here)
    libdir = _pkg_config_libdir()
    if libdir is not None:
        candidate = libdir / LIBRARY_NAME
        tried.append(str(candidate))
        if candidate.is_file():
            return str(candidate)
    else:
        tried.append("pkg-config tessel (not found)")
    found = ctypes.util.find_library("tessel")
    tried.append("ctypes.util.find_library('tessel')")
    if found:
        return found
    raise LibraryNotFound("libtessel.so not found; set TESSEL_LIBRARY to its path (tried: " + ", ".join(tried) + ")")


# ---- C types -------------------------------------------------------------------------------

c_status = ctypes.c_int
PROGRESS = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_float, ctypes.c_void_p)
LOG = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


class ModelParams(ctypes.Structure):
    _fields_ = [
        ("devices", ctypes.POINTER(ctypes.c_char_p)),
        ("n_devices", ctypes.c_size_t),
        ("use_mmap", ctypes.c_bool),
        ("vocab_only", ctypes.c_bool),
        ("progress", PROGRESS),
        ("progress_user_data", ctypes.c_void_p),
    ]


class ModelInfo(ctypes.Structure):
    _fields_ = [
        ("arch", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("file", ctypes.c_char_p),
        ("type", ctypes.c_char_p),
        ("n_vocab", ctypes.c_int64),
        ("n_ctx_train", ctypes.c_int64),
        ("n_embd", ctypes.c_int64),
        ("n_layer", ctypes.c_int64),
        ("n_head", ctypes.c_int64),
        ("n_head_kv", ctypes.c_int64),
        ("n_params", ctypes.c_int64),
        ("size", ctypes.c_uint64),
        ("vocab_only", ctypes.c_bool),
    ]


class DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 64),
        ("description", ctypes.c_char * 256),
        ("kind", ctypes.c_int),
        ("memory_free", ctypes.c_uint64),
        ("memory_total", ctypes.c_uint64),
    ]


class ContextParams(ctypes.Structure):
    _fields_ = [
        ("n_ctx", ctypes.c_int64),
        ("n_ubatch", ctypes.c_int64),
        ("n_threads", ctypes.c_int32),
        ("flash_attn", ctypes.c_int),
        ("type_k", ctypes.c_char_p),
        ("type_v", ctypes.c_char_p),
        ("kv_unified", ctypes.c_bool),
        ("n_seq_max", ctypes.c_int32),
    ]


class BatchToken(ctypes.Structure):
    _fields_ = [
        ("token", ctypes.c_int32),
        ("pos", ctypes.c_int32),
        ("seq", ctypes.c_int32),
        ("logits", ctypes.c_bool),
    ]


class ChatMessage(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p)]


class LogitBias(ctypes.Structure):
    _fields_ = [("token", ctypes.c_int32), ("bias", ctypes.c_float)]


class SamplerParams(ctypes.Structure):
    _fields_ = [
        ("temp", ctypes.c_float),
        ("top_k", ctypes.c_int32),
        ("top_p", ctypes.c_float),
        ("min_p", ctypes.c_float),
        ("repeat_penalty", ctypes.c_float),
        ("repeat_last_n", ctypes.c_int32),
        ("presence_penalty", ctypes.c_float),
        ("frequency_penalty", ctypes.c_float),
        ("seed", ctypes.c_uint32),
        # appended later (tessel.h keeps the older fields' offsets)
        ("logit_bias", ctypes.POINTER(LogitBias)),
        ("n_logit_bias", ctypes.c_size_t),
        ("typical_p", ctypes.c_float),
        ("top_n_sigma", ctypes.c_float),
        ("xtc_probability", ctypes.c_float),
        ("xtc_threshold", ctypes.c_float),
        ("dry_multiplier", ctypes.c_float),
        ("dry_base", ctypes.c_float),
        ("dry_allowed_length", ctypes.c_int32),
        ("dry_penalty_last_n", ctypes.c_int32),
        ("dry_sequence_breakers", ctypes.POINTER(ctypes.c_char_p)),
        ("n_dry_sequence_breakers", ctypes.c_size_t),
        ("mirostat", ctypes.c_int32),
        ("mirostat_tau", ctypes.c_float),
        ("mirostat_eta", ctypes.c_float),
        ("samplers", ctypes.POINTER(ctypes.c_int32)),
        ("n_samplers", ctypes.c_size_t),
        ("grammar", ctypes.c_char_p),
    ]


P = ctypes.POINTER
vp = ctypes.c_void_p
sz = ctypes.c_size_t
i32 = ctypes.c_int32
i64 = ctypes.c_int64
char_p = ctypes.c_char_p
bool_ = ctypes.c_bool

# name: (restype, argtypes)
_SIGNATURES = {
    "tessel_last_error": (char_p, []),
    "tessel_status_name": (char_p, [c_status]),
    "tessel_version": (char_p, []),
    "tessel_set_log_callback": (None, [LOG, vp]),
    "tessel_device_count": (sz, []),
    "tessel_device_get": (c_status, [sz, P(DeviceInfo)]),
    "tessel_model_default_params": (ModelParams, []),
    "tessel_model_load": (c_status, [char_p, P(ModelParams), P(vp)]),
    "tessel_model_free": (None, [vp]),
    "tessel_model_get_info": (c_status, [vp, P(ModelInfo)]),
    "tessel_model_n_vocab": (i32, [vp]),
    "tessel_tokenize": (c_status, [vp, char_p, sz, bool_, bool_, P(i32), sz, P(sz)]),
    "tessel_detokenize": (c_status, [vp, P(i32), sz, bool_, ctypes.c_char_p, sz, P(sz)]),
    "tessel_token_is_eog": (bool_, [vp, i32]),
    "tessel_token_bos": (i32, [vp]),
    "tessel_detokenizer_new": (c_status, [vp, bool_, P(vp)]),
    "tessel_detokenizer_free": (None, [vp]),
    "tessel_detokenizer_push": (c_status, [vp, i32, ctypes.c_char_p, sz, P(sz)]),
    "tessel_detokenizer_flush": (c_status, [vp, ctypes.c_char_p, sz, P(sz)]),
    "tessel_model_chat_template": (char_p, [vp]),
    "tessel_chat_apply_template": (c_status, [char_p, P(ChatMessage), sz, bool_, ctypes.c_char_p, sz, P(sz)]),
    "tessel_model_apply_chat_template": (c_status, [vp, P(ChatMessage), sz, bool_, ctypes.c_char_p, sz, P(sz)]),
    "tessel_context_default_params": (ContextParams, []),
    "tessel_context_new": (c_status, [vp, P(ContextParams), P(vp)]),
    "tessel_context_free": (None, [vp]),
    "tessel_context_n_ctx": (i64, [vp]),
    "tessel_context_n_ctx_seq": (i64, [vp]),
    "tessel_decode": (c_status, [vp, P(BatchToken), sz]),
    "tessel_n_outputs": (sz, [vp]),
    "tessel_get_logits": (c_status, [vp, sz, P(P(ctypes.c_float))]),
    "tessel_kv_seq_rm": (c_status, [vp, i32, i32, i32]),
    "tessel_kv_seq_cp": (c_status, [vp, i32, i32, i32, i32]),
    "tessel_kv_seq_pos_max": (c_status, [vp, i32, P(i32)]),
    "tessel_kv_clear": (c_status, [vp]),
    "tessel_sampler_default_params": (SamplerParams, []),
    "tessel_sampler_new": (c_status, [P(SamplerParams), i32, P(vp)]),
    "tessel_sampler_new_for_model": (c_status, [P(SamplerParams), vp, P(vp)]),
    "tessel_sampler_free": (None, [vp]),
    "tessel_sampler_sample": (c_status, [vp, P(ctypes.c_float), P(i32)]),
    "tessel_sampler_accept": (c_status, [vp, i32]),
    "tessel_sampler_reset": (c_status, [vp]),
    "tessel_sampler_seed": (ctypes.c_uint32, [vp]),
    "tessel_sampler_accept_prompt": (c_status, [vp, i32]),
    "tessel_sampler_reset_grammar": (c_status, [vp]),
    "tessel_json_schema_to_grammar": (c_status, [char_p, sz, ctypes.c_char_p, sz, P(sz)]),
}

TESSEL_OK = 0
TESSEL_ERROR_INVALID_ARGUMENT = 2
TESSEL_ERROR_BUFFER_TOO_SMALL = 100
RANDOM_SEED = 0xFFFFFFFF  # tessel_sampler_params.seed: draw a random seed
FLASH_ATTN = {"off": 0, "on": 1, "auto": 2}


def load() -> ctypes.CDLL:
    """Loads the library and declares every function of _SIGNATURES on it."""
    path = find_library()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise LibraryNotFound(f"{path}: cannot be loaded: {e}") from e
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError as e:
            raise LibraryNotFound(f"{path}: lacks {name} (a libtessel of another version?)") from e
        fn.restype = restype
        fn.argtypes = argtypes
    lib.path = path
    return lib
