"""`rvne sign BLOB --model-version N ... -o OUT`: a signed model
(docs/format.md, "Signed models"). The signature is espsecure's own
(`espsecure sign-data --version 2`, the esptool package): rvne lays out the
bytes it signs and runs it, so keys from `espsecure generate-signing-key
--version 2 --scheme rsa3072`, pre-calculated signatures (`--pub-key
--signature`) and HSMs (`--hsm-config`) work as for an app image.
`--payload` writes only the bytes to sign, for a signing flow outside rvne."""

from pathlib import Path

from ..errors import OutputError
from ..io import blob as blobmod, signed
from ..io.atomic import write_atomic
from ._args import UsageError
from ._out import emit


def register(sub):
    p = sub.add_parser(
        "sign", help="sign a blob with espsecure (Secure Boot v2 RSA-3072) for boards with the signed policy",
        description="Write OUT: BLOB byte for byte, a trailer with the model version (the anti-rollback "
                    "number), 0xFF to a 4 KiB boundary, then the signature sector `espsecure sign-data "
                    "--version 2` appends over all of that (docs/format.md, 'Signed models'). Exit 1 when the "
                    "blob is not loadable or espsecure refuses.")
    p.add_argument("blob", metavar="BLOB", help="the .rvne blob (stays readable by any RVNE reader: the first "
                                                "28 + weights_len bytes of OUT)")
    p.add_argument("--model-version", type=int, required=True, metavar="N",
                   help="the model's version, 1 ... 4294967295: a board never takes a lower one than it serves")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the signed model to write")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--keyfile", action="append", metavar="PEM",
                     help="an RSA-3072 private key (espsecure generate-signing-key --version 2 --scheme rsa3072); "
                          "up to three, one signature block each")
    how.add_argument("--signature", action="append", metavar="SIG",
                     help="a pre-calculated RSA-PSS signature of the payload (`--payload`), with --pub-key")
    how.add_argument("--hsm-config", metavar="CFG", help="sign with espsecure's PKCS#11 HSM flow (its config file)")
    how.add_argument("--payload", action="store_true",
                     help="write only the bytes to sign (for an external signer; then `espsecure sign-data "
                          "--version 2 --pub-key PUB --signature SIG -o SIGNED PAYLOAD`)")
    p.add_argument("--pub-key", action="append", metavar="PEM", help="with --signature: the signer's public key")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=run)


def run(args):
    if (args.signature is None) != (args.pub_key is None):
        raise UsageError("--signature and --pub-key go together, one public key per signature")
    if not 1 <= args.model_version <= 0xFFFFFFFF:
        raise UsageError("--model-version takes 1 ... 4294967295")
    data = blobmod.read_file(args.blob, contract=True).to_bytes()
    body = signed.payload(data, args.model_version)
    out = Path(args.output)
    if args.payload:
        write_atomic(out, body)
        emit(args, f"wrote {out}: {len(body)} bytes to sign (blob {len(data)}, version {args.model_version})",
             {"path": str(out), "bytes": len(body), "blob_bytes": len(data), "model_version": args.model_version})
        return 0
    result = signed.sign_model(data, args.model_version, args.keyfile or (), args.pub_key or (), args.signature or (),
                        args.hsm_config)
    sm = signed.parse(result)          # what espsecure wrote is what a board reads
    try:
        write_atomic(out, result)
    except OSError as exc:
        raise OutputError(f"{out}: cannot write: {exc.strerror}") from None
    signers = [b.key_digest.hex() for b in sm.blocks]
    emit(args, f"signed {out}: {len(result)} bytes, model version {sm.version}, blob crc "
               f"0x{sm.blob.crc_stored:08X}, signers {', '.join(signers)}",
         {"path": str(out), "bytes": len(result), "model_version": sm.version, "crc": sm.blob.crc_stored,
          "signers": signers})
    return 0
