#!/bin/sh
# man.sh — makes a man page (roff) from its hand-written source man/PAGE.in
# and the --help output of the binaries: each source line "@HELP BINARY
# ARGS...@" is replaced by the output of "BUILD/BINARY ARGS..." turned into
# roff, so the options in a page are the ones --help prints (one source).
#   scripts/man.sh BUILD man/predictd.8.in > build/man/predictd.8
# Help lines "  --flag=ARG   text" (and "  command   text") become tagged
# paragraphs (.TP), deeper-indented lines continue them, others are text.
set -eu
build=$1
src=$2

# roff-escapes stdin: backslashes, minus signs, a leading . or '.
esc() {
    sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

# Help lines whose tag runs into its description with one space
# ("  --on-bad-row skip|stop malformed ...", a tag as long as the column) get
# the second space: the column is the one most descriptions of the help
# start at, and the text before it must read as a flag with arguments.
align() {
    awk '
        { line[NR] = $0 }
        /^  -/ && match(substr($0, 3), /[^ ]  +[^ ]/) { col[2 + RSTART + RLENGTH - 1]++ }
        END {
            best = 0
            for (c in col) if (col[c] > col[best] || best == 0) best = c + 0
            for (i = 1; i <= NR; i++) {
                l = line[i]
                if (best > 4 && l ~ /^  -/ && !match(substr(l, 3), /[^ ]  +[^ ]/) &&
                    length(l) > best && substr(l, best - 1, 1) == " " &&
                    substr(l, best, 1) != " " && substr(l, best - 2, 1) != " " &&
                    substr(l, 3, best - 4) ~ /^-[-A-Za-z0-9_=]+( [^ ]+)*$/)
                    l = substr(l, 1, best - 1) " " substr(l, best)
                print l
            }
        }'
}

help_roff() {
    # no hyphenation: a flag is never split across lines
    echo ".nh"
    # shellcheck disable=SC2086
    "$build/$1" $2 | align | esc | awk '
        function flush() { if (text != "") print text; text = "" }
        function leave() { flush(); if (mode == "nf") print ".fi"; mode = "" }
        # the synopsis: "usage: ..." and the lines aligned under it, as they are
        /^usage:/ { leave(); print ".nf"; print; mode = "nf"; next }
        mode == "nf" && /^     +[^ ]/ && !/^ *\\-/ { print; next }
        # "  --flag ARG   text", "  -h, --help", "  command ARGS   text"
        /^  [^ ]/ && (/[^ ]  +[^ ]/ || substr($0, 3, 2) == "\\-") {
            line = substr($0, 3)
            tag = line; desc = ""
            if (match(line, /[^ ]  +[^ ]/)) {
                tag = substr(line, 1, RSTART)
                desc = substr(line, RSTART + 1); sub(/^ +/, "", desc)
            }
            leave(); print ".TP"; print "\\fB" tag "\\fR"; text = desc; mode = "tp"; next
        }
        # deeper lines continue the paragraph above
        /^   +[^ ]/ && mode != "" { l = $0; sub(/^ +/, "", l); text = (text == "" ? l : text " " l); next }
        /^ *$/ { leave(); next }
        { if (mode != "text") { leave(); print ".PP" } ; l = $0; sub(/^ +/, "", l); print l; mode = "text"; next }
        END { leave() }'
}

while IFS= read -r line || [ -n "$line" ]; do
    case $line in
    @HELP\ *@)
        spec=${line#@HELP }
        spec=${spec%@}
        bin=${spec%% *}
        args=""
        [ "$bin" = "$spec" ] || args=${spec#* }
        help_roff "$bin" "$args"
        ;;
    *) printf '%s\n' "$line" ;;
    esac
done < "$src"
