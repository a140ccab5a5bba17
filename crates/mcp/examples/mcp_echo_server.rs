//! A minimal MCP stdio server on rmcp with one tool, `greet` (`{"name"}` → `{"message"}`): the
//! baseline `benches/mcp.py` compares `bosun serve` with. No policy, no sandbox, no trace.
//!
//! Usage: cargo run --release -p bosun-mcp --example mcp_echo_server

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

struct Echo {
    tools: Vec<Tool>,
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("world");
        let output = json!({ "message": format!("Hello, {name}!") });
        let mut result = CallToolResult::success(vec![ContentBlock::text(output.to_string())]);
        result.structured_content = Some(output);
        Ok(result.into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let Value::Object(schema) = schema else {
        return Err("schema".into());
    };
    let tool = Tool::new("greet", "Greets someone by name.", Arc::new(schema));
    let server = Echo { tools: vec![tool] }
        .serve(rmcp::transport::stdio())
        .await?;
    server.waiting().await?;
    Ok(())
}
