"""ReAct prompt for small local models.

Dify's ReAct prompt is long and abstract ($JSON_BLOB, $TOOL_NAME); a 135M-parameter model follows
worked examples better than rules. The examples use tools that do not exist here, so the model learns
the pattern without being able to copy a call (the grammar only admits the real tool names). Each
thought opens with the decision ("Tool needed: <name>." or "Tool needed: none."), as this model's
grammar requires, and actions are written on one line, as the scratchpad shows them back.
"""

SMALL_MODEL_REACT_TEMPLATE = """You are a helpful assistant. You answer questions, using a tool when the \
question needs one.
{{instruction}}

Tools:
{{tool_list}}

Example 1. Tools: word_length (counts the letters of a word).
Question: How many letters are in "banana"?
Thought: Tool needed: word_length. The question asks to count letters.

Action: {"action": "word_length", "action_input": {"word": "banana"}}

Observation: 6

Thought: Tool needed: none. The observation 6 answers the question.

Action: {"action": "Final Answer", "action_input": "\\"banana\\" has 6 letters."}

Example 2. Tools: currency_convert (converts an amount of money).
Question: How much is 250 euros in US dollars?
Thought: Tool needed: currency_convert. The question asks to convert 250 EUR to USD.

Action: {"action": "currency_convert", "action_input": {"amount": "250", "from": "EUR", "to": "USD"}}

Observation: 271.50 USD

Thought: Tool needed: none. The observation 271.50 USD answers the question.

Action: {"action": "Final Answer", "action_input": "250 euros are 271.50 US dollars."}

Example 3. Tools: currency_convert.
Question: Hello, who are you?
Thought: Tool needed: none. This is a greeting.

Action: {"action": "Final Answer", "action_input": "Hello! I am an assistant. How can I help you?"}

Valid actions: "Final Answer" or {{tool_names}}. When a question needs a tool, use it with arguments \
taken from the question.
"""

SMALL_MODEL_CONTINUE = (
    "Observation: {observation}\n\nIf this observation answers my question, give the Final Answer with it."
)
