#!/usr/bin/env bash
# Mutation check of the Catch2 suite (not part of CI): applies each one-line mutation listed in
# tests/cpp/mutants.txt to a scratch clone of the tree as it is now (uncommitted changes included;
# the work tree itself is never touched), rebuilds only the native test binary, runs Catch2, and
# prints KILLED or SURVIVED per mutant. Exits non-zero if a mutant survived, or if a listed line
# is not in its file exactly once (a stale entry), or if a mutant does not compile.
#
#   scripts/mutants.sh            every mutant
#   scripts/mutants.sh WORD...    only those whose file or rule contains one of the WORDs
#
# The scratch clone and its build live in build/mutants (MUTANTS_DIR), kept between runs so that
# a run recompiles only what the mutants touch.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

LIST=$ROOT/tests/cpp/mutants.txt
WORK=${MUTANTS_DIR:-$ROOT/build/mutants}
SRC=$WORK/src
BUILD=$WORK/build
FILTERS=("$@")
TIMEOUT=${MUTANT_TIMEOUT:-300}  # seconds; a mutant that hangs the suite is killed by it

# --- the list: records of `rule:`, `file:`, `-original line`, `+replacement line` -------------
rules=() files=() originals=() replacements=()
rule='' file='' original='' have_original=0 lineno=0
fail_list() { echo "mutants.txt:$lineno: $*" >&2; exit 2; }
while IFS= read -r line || [[ -n $line ]]; do
  lineno=$((lineno + 1))
  case $line in
    '#'* | '') continue ;;
    'rule: '*) rule=${line#rule: } ;;
    'file: '*) file=${line#file: } ;;
    -*) original=${line#-}; have_original=1 ;;
    +*)
      [[ -n $rule && -n $file && $have_original == 1 ]] || fail_list "'+' line without rule, file and '-' line before it"
      wanted=$(( $# == 0 ))
      for word in "${FILTERS[@]}"; do
        if [[ $file == *"$word"* || $rule == *"$word"* ]]; then wanted=1; fi
      done
      if (( wanted )); then
        rules+=("$rule") files+=("$file") originals+=("$original") replacements+=("${line#+}")
      fi
      rule='' file='' original='' have_original=0 ;;
    *) fail_list "unrecognised line: $line" ;;
  esac
done <"$LIST"
(( ${#rules[@]} > 0 )) || { echo "no mutant matches: $*" >&2; exit 2; }

# --- the scratch clone: HEAD, then the work tree's uncommitted changes and new files ----------
mkdir -p "$WORK"
[[ -d $SRC/.git ]] || git clone -q --shared --no-checkout "$ROOT" "$SRC"
git -C "$SRC" fetch -q "$ROOT" HEAD
git -C "$SRC" checkout -q -f --detach FETCH_HEAD
git -C "$SRC" clean -q -fdx
git -C "$ROOT" diff --binary HEAD | (cd "$SRC" && git apply --allow-empty)
git -C "$ROOT" ls-files -z --others --exclude-standard | (cd "$ROOT" && xargs -0 -r cp --parents -t "$SRC")

# Stale entries are errors before anything is built: each original line must be in its file once.
stale=0
for i in "${!rules[@]}"; do
  f=$SRC/${files[$i]}
  count=0
  [[ -f $f ]] && count=$(ORIG="${originals[$i]}" awk '$0 == ENVIRON["ORIG"] { n++ } END { print n + 0 }' "$f")
  if [[ $count != 1 ]]; then
    echo "STALE    ${files[$i]}: the line is there $count times, not once: ${originals[$i]}" >&2
    stale=1
  fi
done
(( stale == 0 )) || exit 2

build() {
  cmake --build "$BUILD" -j"${JOBS:-2}" --target onnx_lattice_tests >"$WORK/build.log" 2>&1
}
run_suite() {
  (cd "$BUILD" && timeout "$TIMEOUT" ./onnx_lattice_tests --abort >"$WORK/catch2.log" 2>&1)
}

# Warnings are not errors here: a realistic mutant may leave a variable unused.
cmake -S "$SRC" -B "$BUILD" -DONNX_ML_PROTO="$CACHE/onnx/onnx-ml.proto" -DCMAKE_BUILD_TYPE=Release \
  -DONNX_LATTICE_WERROR=OFF >/dev/null
start=$SECONDS
log "building the unmutated test binary in $BUILD"
build || { cat "$WORK/build.log" >&2; exit 2; }
run_suite || { echo "the unmutated suite fails; see $WORK/catch2.log" >&2; exit 2; }

# Mutants in list order; a file is restored only when the next mutant is in another file, so each
# rebuild compiles one file (or two) and links.
dirty='' saved=$WORK/original
restore() { [[ -z $dirty ]] || { cp "$saved" "$SRC/$dirty"; dirty=''; }; }
survived=0 broken=0
for i in "${!rules[@]}"; do
  f=${files[$i]}
  if [[ $dirty != "$f" ]]; then restore; cp "$SRC/$f" "$saved"; dirty=$f; fi
  ORIG="${originals[$i]}" REPL="${replacements[$i]}" awk \
    '$0 == ENVIRON["ORIG"] { print ENVIRON["REPL"]; next } { print }' "$saved" >"$SRC/$f"
  line=$(ORIG="${originals[$i]}" awk '$0 == ENVIRON["ORIG"] { print NR; exit }' "$saved")
  if ! build; then
    printf 'NOBUILD  %s:%s  %s\n' "$f" "$line" "${rules[$i]}"
    broken=1
    continue
  fi
  t0=$SECONDS
  if run_suite; then
    printf 'SURVIVED %s:%s  %s\n' "$f" "$line" "${rules[$i]}"
    survived=$((survived + 1))
  else
    status=KILLED
    grep -q '^test cases:' "$WORK/catch2.log" || status="KILLED (crash or timeout)"
    printf '%-8s %s:%s  %s  (%ss)\n' "$status" "$f" "$line" "${rules[$i]}" $((SECONDS - t0))
  fi
done
restore
log "${#rules[@]} mutants, $survived survived, in $((SECONDS - start)) s"
(( survived == 0 && broken == 0 ))
