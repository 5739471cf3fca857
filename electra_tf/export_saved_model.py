"""Exports an ELECTRA model as a SavedModel for TF Serving (or, with
`--format litert|onnx`, its ids-in network as one file): the command line over
`electra_tf.serving.export` and `electra_tf.serving.portable`.

The source is any format `electra_tf.sources.any_format` reads (`--keras-model`
or `--checkpoint`, with the run's `--hparams` where it has no `config.json`);
`--model` serves the discriminator, the generator as a masked LM, or a
fine-tuned head (`--task`). The length, vocab and casing default to what the
model records; one line says which length and where it came from. docs/serve.md
describes the signatures and the options.

Example:

  python -m electra_tf.export_saved_model --checkpoint data/models/tiny \\
      --model discriminator --export-dir /tmp/electra_serving
"""

import argparse
import sys

import keras

from electra_tf.serving import export as export_lib
from electra_tf.serving import modules as serving_modules
from electra_tf.serving import portable
from electra_tf.utils import exit_codes
from electra_tf.utils import file_io
from electra_tf.utils import interrupts
from electra_tf.utils.file_io import check_writable


def _parse_args(argv):
  parser = argparse.ArgumentParser(
    prog="python -m electra_tf.export_saved_model",
    description="Export an ELECTRA model as a TF Serving SavedModel.",
  )
  source = parser.add_mutually_exclusive_group(required=True)
  source.add_argument(
    "--keras-model",
    help="a .keras ElectraPretrainer or FinetuningModel, or "
    "a discriminator/generator written by convert_checkpoint",
  )
  source.add_argument(
    "--checkpoint", help="checkpoint prefix or directory (electra_tf or original/official)"
  )
  parser.add_argument(
    "--hparams",
    help="hparams of the run (JSON string or .json file): "
    "over the model dir's config.json for electra_tf checkpoints (required for runs "
    "without one, and for --model task); optional for official pre-training "
    "checkpoints (sizes come from the shapes)",
  )
  # Read only for a checkpoint without config.json, refused otherwise.
  parser.add_argument("--model-name", help="the run's model name (default: electra)")
  parser.add_argument("--data-dir", help="the run's data dir (default: the checkpoint's dir)")
  parser.add_argument(
    "--vocab-file", help="WordPiece vocab or SentencePiece model (default: the model's own)"
  )
  parser.add_argument("--export-dir", required=True, help="writes <export-dir>/<version>/")
  portable.add_flags(parser)  # --format, --quantize
  # --mixed-precision, --length-multiple, --jit-compile, --constant-weights
  export_lib.add_saved_model_flags(parser)
  parser.add_argument(
    "--model",
    default="discriminator",
    choices=export_lib.MODEL_KINDS,
    help="what to serve: RTD discriminator, generator as masked LM, or a fine-tuned task head",
  )
  parser.add_argument("--task", help="the fine-tuned head to serve (--model task)")
  parser.add_argument(
    "--max-seq-length", type=int, help="S of every signature (default: the trained one, else 128)"
  )
  parser.add_argument("--version", type=int, help="default: 1 + the newest existing version")
  parser.add_argument(
    "--overwrite", action="store_true", help="replace an existing <export-dir>/<version>"
  )
  parser.add_argument("--top-k", type=int, default=5, help="generator: tokens per [MASK]")
  parser.add_argument(
    "--max-predictions",
    type=int,
    default=20,
    help="generator: [MASK] positions scored per sequence",
  )
  parser.add_argument(
    "--max-query-length", type=int, help="QA question budget (default: the trial's, else 64)"
  )
  parser.add_argument(
    "--no-lower-case",
    action="store_true",
    help="cased vocab (default: the hparams' do_lower_case, else lower-case)",
  )
  parser.add_argument(
    "--no-strip-accents",
    action="store_true",
    help="keep accents when lower-casing (default: the hparams' strip_accents, else strip)",
  )
  args = parser.parse_args(argv)
  if args.length_multiple < 1:
    parser.error(f"--length-multiple {args.length_multiple}; expected at least 1")
  if args.task is not None and args.model != "task":
    parser.error(f"--task {args.task} picks a fine-tuned head: it applies to --model task only")
  return args


def main(argv=None):
  args = _parse_args(argv)
  # A Ctrl-C that lands in a TF finaliser still stops the export; SIGTERM and
  # SIGHUP stop it as Ctrl-C does (nothing left), in one line, exit 128 + the signal.
  return interrupts.run_stoppable("export_saved_model", lambda: _export(args))


def _export(args):
  keras.mixed_precision.set_global_policy("float32")
  try:
    # Before loading the model (seconds to minutes).
    check_writable(args.export_dir, "--export-dir", directory=True)
    # the extra's packages, and no SavedModel-only flag with another format, before the model
    portable.check_request(args.format, args.quantize, export_lib.saved_model_flags_given(args))
    if args.format == "tf_saved_model":
      export_lib.check_export_dir_kind(args.export_dir, args.model, args.task)
    source = args.keras_model or args.checkpoint
    model, config = export_lib.load_model(
      args.keras_model,
      args.checkpoint,
      args.hparams,
      args.model,
      args.model_name,
      args.data_dir,
      doing=None,  # warned after the checks below (settings_from_flags)
    )
    vocab_file, do_lower_case, strip_accents, lengths = export_lib.settings_from_flags(
      model, config, source, args
    )
    print(lengths.line)
    with file_io.full_disk_as_bad_input("--export-dir", args.export_dir):
      if args.format != "tf_saved_model":
        path = portable.export_from_flags(model, args, vocab_file, do_lower_case, strip_accents)
        print(f"Exported {args.model} ({args.format}) to {path}; tokenizer files beside it")
        return 0
      path = export_lib.export(
        model,
        args.model,
        vocab_file,
        args.export_dir,
        max_seq_length=args.max_seq_length,
        version=args.version,
        task=args.task,
        do_lower_case=do_lower_case,
        strip_accents=strip_accents,
        top_k=args.top_k,
        max_predictions=args.max_predictions,
        max_query_length=args.max_query_length,
        mixed_precision=args.mixed_precision,
        overwrite=args.overwrite,
        length_multiple=args.length_multiple,
        jit_compile=args.jit_compile,
        constant_weights=args.constant_weights,
      )
  except (ValueError, portable.MissingExtra) as e:
    print(f"export_saved_model: error: {e}", file=sys.stderr)
    return exit_codes.BAD_INPUT
  print(
    f"Exported {args.model} SavedModel to {path} with signatures "
    f"{serving_modules.SIGNATURE_TEXT}, {serving_modules.SIGNATURE_IDS}, "
    f"{serving_modules.SIGNATURE_EXAMPLES}"
  )
  print(
    f"Load it in Python with electra_tf.serving.load({path!r}); with plain TensorFlow, "
    f"import tensorflow_text before tf.saved_model.load (the raw-text signature tokenizes "
    f"with its {export_lib.tokenizer_op(vocab_file)} op)"
  )
  return 0


if __name__ == "__main__":
  sys.exit(main())
