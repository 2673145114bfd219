# dshpty's zsh integration, second part: zsh reads it as $ZDOTDIR/.zshrc. It restores the
# user's ZDOTDIR, reads the user's .zshrc (rc user), sets history, removes the private
# directory (no fork: zsh's own rm), and marks every prompt with OSC 133 sequences that
# carry the session's nonce (see the bash integration for the kinds). The user's prompt is
# decorated, never replaced; nothing here is exported.
if [[ -n $__dshpty_user_zdotdir ]]; then ZDOTDIR=$__dshpty_user_zdotdir; else unset ZDOTDIR; fi
if [[ $__dshpty_rc == user ]]; then
  [[ -r ${ZDOTDIR:-$HOME}/.zshrc ]] && source ${ZDOTDIR:-$HOME}/.zshrc
else
  PROMPT='dsh> '
fi
zmodload -F zsh/files b:zf_rm b:zf_rmdir 2>/dev/null &&
  zf_rm -f -- $__dshpty_dir/.zshenv $__dshpty_dir/.zshrc && zf_rmdir -- $__dshpty_dir
unset __dshpty_dir __dshpty_user_zdotdir

# History, after the startup files (zsh reads the history file after them).
case $__dshpty_history in
  off) unset HISTFILE; HISTSIZE=0; SAVEHIST=0 ;;
  /*) HISTFILE=$__dshpty_history; HISTSIZE=${HISTSIZE:-10000}; SAVEHIST=$HISTSIZE ;;
  *) unset HISTFILE; SAVEHIST=0 ;;  # private: in memory, never read or written
esac

# Line-mode friendly: no partial-line marker or carriage return before the prompt, no
# bracketed paste.
unsetopt prompt_sp prompt_cr
unset zle_bracketed_paste

typeset -g __dshpty_open=$'%{\e]133;A;dshpty='$__dshpty_nonce$'\a%}'
typeset -g __dshpty_close=$'%{\e]133;B;dshpty='$__dshpty_nonce$'\a%}'
typeset -g __dshpty_prompt= __dshpty_pwd= __dshpty_cwd=
# PROMPT2 (dquote>, heredoc>): the line typed was not a whole command, more is read.
typeset -g __dshpty_cont=$'%{\e]133;L;state=continuation;dshpty='$__dshpty_nonce$'\a%}'

__dshpty_encode_cwd() {
  emulate -L zsh
  setopt no_multibyte
  local s=$PWD out= c i
  if [[ $s == *[^A-Za-z0-9/._~+-]* ]]; then
    for (( i = 1; i <= ${#s}; i++ )); do
      c=${s[i]}
      if [[ $c == [A-Za-z0-9/._~+-] ]]; then out+=$c; else printf -v c '%%%02X' "'$c"; out+=$c; fi
    done
    __dshpty_cwd=$out
  else
    __dshpty_cwd=$s
  fi
  __dshpty_pwd=$PWD
}

__dshpty_precmd() {
  local st=$?
  # A virtualenv's activate exports PS1: the marks stay the shell's own.
  typeset -g +x PS1 PROMPT 2>/dev/null
  if [[ $PROMPT != "$__dshpty_prompt" ]]; then
    local user=${PROMPT//"$__dshpty_open"/}
    user=${user//"$__dshpty_close"/}
    __dshpty_prompt=$__dshpty_open$user$__dshpty_close
    PROMPT=$__dshpty_prompt
  fi
  [[ $PROMPT2 == *"$__dshpty_cont"* ]] || PROMPT2=$__dshpty_cont$PROMPT2
  [[ $PWD == "$__dshpty_pwd" ]] || __dshpty_encode_cwd
  # The status right after P, before any hook or prompt of the user's can print: only a D
  # there counts (a sourced file can read the nonce and print marks of its own).
  builtin printf '\e]133;P;cwd=%s;dshpty=%s\a\e]133;D;%s;dshpty=%s\a' \
    "$__dshpty_cwd" "$__dshpty_nonce" "$st" "$__dshpty_nonce"
  return $st
}

__dshpty_preexec() { builtin printf '\e]133;C;dshpty=%s\a' "$__dshpty_nonce"; }

# First among the hooks, so a user's hook sees the status too; add-zsh-hook appends.
precmd_functions=(__dshpty_precmd $precmd_functions)
preexec_functions=(__dshpty_preexec $preexec_functions)
