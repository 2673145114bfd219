# dshpty's zsh integration, first part: zsh reads it as $ZDOTDIR/.zshenv, ZDOTDIR being a
# private directory the helper made (docs/shell-backend.md, "Dialects"). It takes what the
# host passed, then reads the user's .zshenv when the session wants the user's files.
# The nonce comes through a pipe the helper filled, read once (see the bash integration).
typeset -g __dshpty_nonce __dshpty_rc=$DSHPTY_RC
read -r __dshpty_nonce <$DSHPTY_NONCE_FROM
typeset -g __dshpty_history=$DSHPTY_HISTORY __dshpty_dir=$DSHPTY_ZSH_DIR
typeset -g __dshpty_user_zdotdir=$DSHPTY_USER_ZDOTDIR
unset DSHPTY_NONCE_FROM DSHPTY_RC DSHPTY_HISTORY DSHPTY_ZSH_DIR DSHPTY_USER_ZDOTDIR
if [[ $__dshpty_rc == user ]]; then
  if [[ -n $__dshpty_user_zdotdir ]]; then ZDOTDIR=$__dshpty_user_zdotdir; else unset ZDOTDIR; fi
  [[ -r ${ZDOTDIR:-$HOME}/.zshenv ]] && source ${ZDOTDIR:-$HOME}/.zshenv
  # The user's .zshenv may have chosen its own ZDOTDIR: that is the user's from now on.
  typeset -g __dshpty_user_zdotdir=${ZDOTDIR-}
else
  # No system-wide zprofile, zshrc or zlogin either.
  setopt no_global_rcs
fi
# zsh reads .zshrc from $ZDOTDIR next: ours, which restores the user's.
ZDOTDIR=$__dshpty_dir
