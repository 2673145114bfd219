# dshpty's bash integration, read as bash's --rcfile (docs/shell-backend.md, "Marks").
# It marks every prompt with OSC 133 sequences that carry the session's nonce, all from
# PS1 but C:
#   P  a new prompt: the cwd (percent-encoded) and n, a count of prompts (readline repaints
#      the same expanded prompt on a resize: a repeated n is a repaint, not a new prompt)
#   D  the last status   A  prompt start   B  prompt end (input starts)
#   C  a command was read (PS0)
#   L  state=continuation: the line typed was not a whole command, more is read (PS2)
# The user's prompt is decorated, never replaced: whatever sets PS1 later (a virtualenv,
# a prompt theme, the user) is wrapped again before the next prompt. Nothing here is
# exported, and nothing forks.
#
# It runs at every session's start, and bash runs it cold: each statement costs several
# microseconds the first time (tools/bench/integration_cost.py --startup), so the start-up
# path is kept to few statements.
# The nonce comes through a pipe the helper filled (never the environment, which
# /proc/PID/environ shows to every program of the session); read once, it is gone.
read -r __dshpty_nonce <"$DSHPTY_NONCE_FROM"
__dshpty_rc=$DSHPTY_RC __dshpty_history=$DSHPTY_HISTORY
unset DSHPTY_NONCE_FROM DSHPTY_RC DSHPTY_HISTORY
export -n PS1 PS0 PROMPT_COMMAND

# bash built with a system bashrc (Debian's: /etc/bash.bashrc) has read it before this
# file, whatever the mode: only --norc skips it, and that would skip this file too.
if [[ $__dshpty_rc == user ]]; then
  [[ -r ~/.bashrc ]] && . ~/.bashrc
else
  PS1='dsh> '
fi

# History, after the startup files (bash reads the history file after them).
case $__dshpty_history in
  off) set +o history; unset HISTFILE ;;
  /*) HISTFILE=$__dshpty_history ;;
  *) unset HISTFILE ;;  # private: in memory, never read or written
esac

# Line-mode friendly: no sideways scrolling of a long line, no bracketed paste.
bind 'set horizontal-scroll-mode off' 'set enable-bracketed-paste off' 2>/dev/null

__dshpty_open='\[\e]133;P;cwd=${__dshpty_cwd};n=$((++__dshpty_n));dshpty='$__dshpty_nonce'\a\e]133;D;$?;dshpty='$__dshpty_nonce'\a\e]133;A;dshpty='$__dshpty_nonce'\a\]'
__dshpty_close='\[\e]133;B;dshpty='$__dshpty_nonce'\a\]'
__dshpty_c=$'\e]133;C;dshpty='$__dshpty_nonce$'\a'
__dshpty_cont='\[\e]133;L;state=continuation;dshpty='$__dshpty_nonce'\a\]'
__dshpty_ps1= __dshpty_ps0= __dshpty_ps2= __dshpty_pwd= __dshpty_cwd= __dshpty_n=0

# Byte by byte only when the path needs it: LC_ALL=C costs a setlocale on the way in and out.
__dshpty_encode_cwd() {
  __dshpty_pwd=$PWD
  case $PWD in
    *[!A-Za-z0-9/._~+-]*) ;;
    *) __dshpty_cwd=$PWD; return ;;
  esac
  local LC_ALL=C s=$PWD out= c i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case $c in
      [A-Za-z0-9/._~+-]) out+=$c ;;
      *) printf -v c '%%%02X' "'$c"; out+=$c ;;
    esac
  done
  __dshpty_cwd=$out
}

# Every prompt: one test, in a function (bash parses a PROMPT_COMMAND string anew at each
# prompt, a function's body once). It is on every send's path: tools/bench/integration_cost.py
# puts bash's CPU per prompt at about 28 us bare and 55-65 us with the integration, the same
# with P echoed by this hook or printed from PS1; P in PS1 is one write, and one wake-up of
# the host, fewer.
__dshpty_prompt() {
  [[ $PS1 == "$__dshpty_ps1" && $PWD == "$__dshpty_pwd" && $PS0 == "$__dshpty_ps0" && $PS2 == "$__dshpty_ps2" ]] ||
    __dshpty_refresh
}

# What changed: a prompt set anew (a virtualenv's activate exports it: the marks stay the
# shell's own), a PS0 or PS2 of the user's, another directory.
__dshpty_refresh() {
  export -n PS1 PS0 PROMPT_COMMAND
  if [[ $PS1 != "$__dshpty_ps1" ]]; then
    local user=${PS1//"$__dshpty_open"/}
    user=${user//"$__dshpty_close"/}
    __dshpty_ps1=$__dshpty_open$user$__dshpty_close
    PS1=$__dshpty_ps1
  fi
  [[ $PS0 == *"$__dshpty_c"* ]] || PS0=$PS0$__dshpty_c
  __dshpty_ps0=$PS0
  [[ $PS2 == *"$__dshpty_cont"* ]] || PS2=$__dshpty_cont$PS2
  __dshpty_ps2=$PS2
  if [[ $PWD != "$__dshpty_pwd" ]]; then
    __dshpty_encode_cwd
  fi
}

# bash >= 5.1 runs every element of a PROMPT_COMMAND array: a far index survives the
# usual `PROMPT_COMMAND=...` (which sets element 0) and `PROMPT_COMMAND+=(...)`.
if (( BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1) )); then
  PROMPT_COMMAND[1000]=__dshpty_prompt
else
  PROMPT_COMMAND="__dshpty_prompt${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
fi
