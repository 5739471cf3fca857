"""What a path holds, and loading it: `formats` tells every format apart by
content, `any_format` is the one door through which every entry point loads
any of them, and `layout`, `finetuned_heads` and `object_graph` read one
format each. Sits above `checkpoints` and `interop`."""
