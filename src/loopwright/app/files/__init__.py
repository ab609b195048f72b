"""Files of a message: uploads, file inputs, chat files, speech."""
